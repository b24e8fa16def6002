# SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
import subprocess, hashlib
data = [("line %d %s" % ((i * 7919) % 100003, "y" * (i % 50))) for i in range(300000)]
txt = "\n".join(data) + "\n"
out = subprocess.run(["sort"], input=txt.encode(), capture_output=True).stdout
print(hashlib.sha1(out).hexdigest())
for i in range(20):
    r = subprocess.run(["python3", "-c", "import sys; print(sum(range(%d)))" % (i * 1000)], capture_output=True, text=True)
    print(r.stdout.strip(), end=" ")
print()
r = subprocess.run("exit 3", shell=True); print("rc", r.returncode)
print(len(data))
