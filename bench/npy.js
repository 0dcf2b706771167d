// Reads a NumPy .npy file (format version 1 or 2, little endian, C order) of float32, int64 or
// int32 into an onnxruntime-node Tensor — what the bench's ONNX Runtime drivers feed.
const fs = require('fs');

const kTypes = { '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array] };

function readNpy(ort, file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(file + ': not a .npy file');
  const v2 = buf[6] >= 2;
  const headerLen = v2 ? buf.readUInt32LE(8) : buf.readUInt16LE(8);
  const start = (v2 ? 12 : 10) + headerLen;
  const header = buf.toString('latin1', v2 ? 12 : 10, start);
  const descr = header.match(/'descr':\s*'([^']*)'/)[1];
  if (!(descr in kTypes)) throw new Error(file + ': dtype ' + descr + ' is not float32, int64 or int32');
  if (/'fortran_order':\s*True/.test(header)) throw new Error(file + ': Fortran order is not supported');
  const shape = header.match(/'shape':\s*\(([^)]*)\)/)[1].split(',').filter((s) => s.trim()).map(Number);
  const [type, Array] = kTypes[descr];
  const data = new Array(buf.buffer.slice(buf.byteOffset + start, buf.byteOffset + buf.length));
  return new ort.Tensor(type, data, shape);
}

module.exports = { readNpy };
