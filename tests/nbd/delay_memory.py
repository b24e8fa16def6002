# An nbdkit python plugin (Debian package nbdkit-plugin-python) for the NBD
# benchmark: a RAM disk like nbdkit's memory plugin whose reads and writes
# each wait delay_us microseconds first. nbdkit 1.32's delay filter counts
# whole milliseconds and this kernel has no sch_netem, so a per-request
# delay of tens of microseconds needs this. The plugin's own cost (the
# Python interpreter, one lock for all requests' copies) shows in its run
# with delay_us=0, which the benchmark reports beside the delayed runs.
#   nbdkit -U SOCK python tests/nbd/delay_memory.py size=64M delay_us=50
import ctypes
import threading
import time

import nbdkit

API_VERSION = 2

PR_SET_TIMERSLACK = 29
_libc = ctypes.CDLL(None, use_errno=True)
_slack = threading.local()
size = 0
delay = 0.0
disk = None


def config(key, value):
    global size, delay
    if key == "size":
        size = nbdkit.parse_size(value)
    elif key == "delay_us":
        delay = int(value) / 1e6
    else:
        raise RuntimeError("unknown parameter " + key)


def config_complete():
    global disk
    if size <= 0:
        raise RuntimeError("size= is required")
    disk = bytearray(size)


def thread_model():
    return nbdkit.THREAD_MODEL_PARALLEL


def open(readonly):
    return 1


def get_size(h):
    return len(disk)


def wait():
    # A thread's sleeps may overshoot by its timer slack (50 us by
    # default): ask for 1 us on each nbdkit worker thread once.
    if not getattr(_slack, "set", False):
        _libc.prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0)
        _slack.set = True
    if delay > 0:
        time.sleep(delay)


def pread(h, buf, offset, flags):
    wait()
    buf[:] = disk[offset:offset + len(buf)]


def pwrite(h, buf, offset, flags):
    wait()
    disk[offset:offset + len(buf)] = buf


def can_flush(h):
    return True


def flush(h, flags):
    pass
