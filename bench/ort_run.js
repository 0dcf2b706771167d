// Times one ONNX model's forward pass with ONNX Runtime (Node, CPU; 2 intra-op threads,
// optimisation level "all") on one input .npy; the model's first input gets it. Prints one JSON
// line: the times of ROUNDS runs after one warm-up (ms), and the first output's sum (a check).
//
// usage: node ort_run.js MODEL.onnx INPUT.npy ROUNDS [NAME=FILE.npy ...]   (NODE_PATH: where
// onnxruntime-node is). INPUT.npy feeds the first input; it may be NAME=FILE.npy too, and each
// further NAME=FILE.npy feeds the input NAME (a whole model's input_ids, attention_mask, ...).
const ort = require('onnxruntime-node');
const { readNpy } = require('./npy.js');

async function main() {
  const [model, input, rounds] = [process.argv[2], process.argv[3], Number(process.argv[4] || 10)];
  const opts = { intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' };
  const session = await ort.InferenceSession.create(model, opts);
  const feeds = {};
  for (const arg of [input, ...process.argv.slice(5)]) {
    const eq = arg.indexOf('=');
    feeds[eq < 0 ? session.inputNames[0] : arg.slice(0, eq)] = readNpy(ort, eq < 0 ? arg : arg.slice(eq + 1));
  }
  const result = { ms: [], sum: 0 };
  let out = await session.run(feeds);  // warm-up
  for (let r = 0; r < rounds; ++r) {
    const t0 = process.hrtime.bigint();
    out = await session.run(feeds);
    result.ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  for (const x of out[session.outputNames[0]].data) result.sum += Number(x);
  console.log(JSON.stringify(result));
}

main().catch((e) => { console.error('ort_run: ' + e.message); process.exit(1); });
