/**
 * A full disk, simulated: preloaded with `node --import` into a lobes command, it makes
 * writes to files under $LOBES_TEST_ENOSPC_DIR fail with ENOSPC once more than
 * $LOBES_TEST_ENOSPC_BYTES bytes have been written there (as the kernel reports a full
 * file system: a system error with code ENOSPC from write()).
 */
import fs from 'node:fs';
import path from 'node:path';
import { syncBuiltinESMExports } from 'node:module';

const dir = path.resolve(process.env.LOBES_TEST_ENOSPC_DIR ?? '/nonexistent');
const limit = Number(process.env.LOBES_TEST_ENOSPC_BYTES ?? '0');
let written = 0;
const paths = new Map();

const openSync = fs.openSync;
fs.openSync = function (p, ...rest) {
  const fd = openSync.call(fs, p, ...rest);
  paths.set(fd, path.resolve(String(p)));
  return fd;
};
const closeSync = fs.closeSync;
fs.closeSync = function (fd) {
  paths.delete(fd);
  return closeSync.call(fs, fd);
};
const writeSync = fs.writeSync;
fs.writeSync = function (fd, buf, ...rest) {
  const p = paths.get(fd);
  if (p && p.startsWith(dir + path.sep)) {
    const n = typeof buf === 'string' ? Buffer.byteLength(buf) : typeof rest[1] === 'number' ? rest[1] : buf.byteLength;
    if (written + n > limit) {
      const e = new Error(`ENOSPC: no space left on device, write`);
      Object.assign(e, { errno: -28, code: 'ENOSPC', syscall: 'write' });
      throw e;
    }
    written += n;
  }
  return writeSync.call(fs, fd, buf, ...rest);
};
syncBuiltinESMExports();
