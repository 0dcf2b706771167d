// Greedy decoding with ONNX Runtime (Node, CPU) on the two decoder files `gaf generate` reads
// (decoder_model.onnx, decoder_with_past_model.onnx): the same loop as engine/generator.cpp —
// prefill, argmax of the last position, then one step per token feeding present.* back as
// past_key_values.*. Prints one JSON line: per round the time to first token and the step times
// (ms), and the last round's tokens.
//
// usage: node ort_generate.js MODEL_DIR NEW_TOKENS ROUNDS   (NODE_PATH: where onnxruntime-node is)
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');

// input_ids.npy: int64 [1, P] (numpy's version 1 header, little endian).
function readIds(file) {
  const buf = fs.readFileSync(file);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  if (!header.includes("'<i8'")) throw new Error(file + ': expected int64 ids');
  const shape = header.match(/\(([^)]*)\)/)[1].split(',').filter((s) => s.trim()).map(Number);
  const data = new BigInt64Array(buf.buffer.slice(buf.byteOffset + 10 + headerLen, buf.byteOffset + buf.length));
  return new ort.Tensor('int64', data, shape);
}

function argmaxLast(logits) {
  const [, s, v] = logits.dims;
  const d = logits.data;
  let best = 0;
  for (let i = 1; i < v; ++i) if (d[(s - 1) * v + i] > d[(s - 1) * v + best]) best = i;
  return best;
}

async function main() {
  const [dir, newTokens, rounds] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4] || 1)];
  const opts = { intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' };
  const prefill = await ort.InferenceSession.create(path.join(dir, 'decoder_model.onnx'), opts);
  const step = await ort.InferenceSession.create(path.join(dir, 'decoder_with_past_model.onnx'), opts);
  const pasts = step.inputNames.filter((n) => n.startsWith('past_key_values.'));
  const prompt = readIds(path.join(dir, 'input_ids.npy'));
  const result = { first_token_ms: [], step_ms: [], tokens: [] };
  for (let r = 0; r <= rounds; ++r) {  // round 0 warms up and is not reported
    const tokens = [];
    let t0 = process.hrtime.bigint();
    let out = await prefill.run({ input_ids: prompt });
    let next = argmaxLast(out.logits);
    const first = Number(process.hrtime.bigint() - t0) / 1e6;
    tokens.push(next);
    const steps = [];
    for (let t = 1; t < newTokens; ++t) {
      t0 = process.hrtime.bigint();
      const feeds = { input_ids: new ort.Tensor('int64', BigInt64Array.from([BigInt(next)]), [1, 1]) };
      for (const p of pasts) feeds[p] = out['present.' + p.slice('past_key_values.'.length)];
      out = await step.run(feeds);
      next = argmaxLast(out.logits);
      steps.push(Number(process.hrtime.bigint() - t0) / 1e6);
      tokens.push(next);
    }
    if (r > 0) {
      result.first_token_ms.push(first);
      result.step_ms.push(...steps);
      result.tokens = tokens;
    }
  }
  console.log(JSON.stringify(result));
}

main().catch((e) => { console.error('ort_generate: ' + e.message); process.exit(1); });
