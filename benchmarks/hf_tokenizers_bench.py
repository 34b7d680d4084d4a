"""The Hugging Face tokenizers library on the same texts as kv_bench's tokenizer figures,
for comparison: CPU time per encode, one thread.

Usage (any Python with transformers, e.g. the vLLM venv of scripts/vllm-env.sh):
  HF_HUB_OFFLINE=1 python benchmarks/hf_tokenizers_bench.py MODEL_DIR TEXT_FILE [N]
MODEL_DIR: a model folder (tests/tokenizer/fixtures/tiny-qwen2 with config.json works);
the tokenizer transformers builds for it is what vLLM runs.
"""
import os
import sys
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"
from transformers import AutoTokenizer  # noqa: E402

tok = AutoTokenizer.from_pretrained(sys.argv[1]).backend_tokenizer
text = open(sys.argv[2], encoding="utf-8").read()
n = int(sys.argv[3]) if len(sys.argv) > 3 else 100
count = len(tok.encode(text, add_special_tokens=False).ids)
t0 = time.process_time()
for _ in range(n):
    tok.encode(text, add_special_tokens=False)
cpu = time.process_time() - t0
print(f"HF tokenizers: {count * n / cpu:.0f} tokens/s CPU, {cpu / n * 1e6:.0f} us CPU per encode "
      f"of {count} tokens")
