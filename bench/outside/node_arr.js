// SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
let a = []; for (let i = 0; i < 1500000; i++) a.push({i, s: 'x' + i});
let b = new Float64Array(5e6); for (let i = 0; i < b.length; i++) b[i] = i * 1.5;
let h = 0; for (const o of a) h = (h * 31 + o.i + o.s.length) | 0;
let s = 0; for (let i = 0; i < b.length; i += 7) s += b[i];
console.log(h, s);
