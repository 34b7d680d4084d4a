#!/usr/bin/env python3
"""Makes the tiny model that real vLLM serves in Kinference's tests and demos.

Usage: vllm_tiny_model.py OUT_DIR   (run by scripts/vllm-env.sh with the vLLM venv's python)

Nothing is downloaded (run with HF_HUB_OFFLINE=1). The folder holds:
  - a byte-level BPE tokenizer (vocabulary 8192) trained with the `tokenizers` library on
    text generated here from fixed seeds: English-like sentences from a small word list and
    runs of random lower-case alphanumeric words like the workloads' synthetic text
    (src/common/tokenizer.h SyntheticWord), so both tokenize to sensible lengths;
    special tokens <|endoftext|>, <|im_start|>, <|im_end|> (eos) and a ChatML chat template;
  - a Qwen2ForCausalLM with random weights (torch seed 0): 2 layers, hidden 128, 4 attention
    heads, 2 KV heads, intermediate 256, vocabulary 8192, 32768 positions, bfloat16
    (about 1.3 M parameters, 2.7 MB). Its output is random tokens; it exists so that vLLM's
    scheduler, prefix cache, metrics and HTTP surface run for real on a CPU.
Same script, same files: every random choice has a fixed seed (checked by comparing the
sha256 of two runs' files).
"""

import os
import random
import sys

CORPUS_SEED = 20261201
MODEL_SEED = 0
VOCAB = 8192
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# ChatML, as Qwen2 models use it: each message as <|im_start|>role\ncontent<|im_end|>\n,
# then "<|im_start|>assistant\n" when a generation prompt is asked for.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

WORDS = (
    "the of and to a in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when if "
    "will so no what up out who them some about into more time can only other new like "
    "could these two may first then do any its now my such our over most after even also "
    "how where much through back years way well because down should each just those people "
    "very work between both under last never same another while might great old year off "
    "come since go against came right used take three small large request token cache model "
    "prefix router gateway replica latency throughput engine block queue stream server "
    "client prompt reply answer question system user assistant memory compute schedule "
    "batch decode prefill kernel tensor layer weight vector matrix index hash policy tenant "
    "usage metric scrape endpoint pool cluster node pod service deployment kubernetes"
).split()
ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def corpus(rng):
    """Yields lines of training text, fixed by rng's seed."""
    for _ in range(4000):
        n = rng.randint(6, 24)
        words = [rng.choice(WORDS) for _ in range(n)]
        words[0] = words[0].capitalize()
        line = " ".join(words) + rng.choice([".", ".", ".", "?", "!", ":", ";", ","])
        if rng.random() < 0.2:
            line += " " + str(rng.randint(0, 100000))
        yield line
    for _ in range(4000):
        n = rng.randint(8, 40)
        yield " " + " ".join(
            "".join(rng.choice(ALNUM) for _ in range(rng.randint(1, 8))) for _ in range(n))


def make_tokenizer(out_dir):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(corpus(random.Random(CORPUS_SEED))), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=["<|im_start|>"],
        model_max_length=32768,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out_dir)
    return fast


def make_model(out_dir, tokenizer):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(MODEL_SEED)
    config = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        torch_dtype="bfloat16",
    )
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.generation_config.do_sample = False
    model.save_pretrained(out_dir, safe_serialization=True)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: vllm_tiny_model.py OUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    tokenizer = make_tokenizer(out_dir)
    make_model(out_dir, tokenizer)
    print(f"tiny model written to {out_dir}")


if __name__ == "__main__":
    main()
