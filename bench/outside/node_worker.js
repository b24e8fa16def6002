// SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
if (isMainThread) {
  let done = 0, out = [];
  for (let k = 0; k < 3; k++) {
    const w = new Worker(__filename, { workerData: k });
    w.on('message', m => { out[k] = m; if (++done == 3) console.log(out.join(' ')); });
  }
} else {
  const k = workerData; let a = [];
  for (let i = 0; i < 600000; i++) a.push('w' + k + ':' + i);
  let h = 0; for (const s of a) h = (h * 33 + s.length + s.charCodeAt(s.length - 1)) | 0;
  parentPort.postMessage(h);
}
