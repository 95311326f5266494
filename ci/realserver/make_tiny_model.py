"""Build a tiny random-weight Llama and a locally trained byte-level BPE tokenizer, offline.

Usage: python make_tiny_model.py OUT_DIR [--seed 0] [--hidden 256] [--intermediate 512]
                                 [--layers 2] [--heads 4] [--kv-heads 2]

Needs torch, transformers and tokenizers (the vLLM environment has them). Deterministic: the same
seed gives the same weights and tokenizer. The result is an ordinary Hugging Face checkpoint
(config.json, model.safetensors, tokenizer.json ...) that vLLM loads with `--model OUT_DIR`, and
whose tokenizer `make_tiny_gguf.py` reuses for llama.cpp. Its output is gibberish; the servers'
shapes, counters and streams are real.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import random
from pathlib import Path
from typing import Any

# Words to train the tokenizer on, generated locally so nothing is downloaded (the same list,
# order and seed as the recipe that made the captures in tests/fixtures).
_WORDS = (  # noqa: SIM905  (one sentence reads better than 71 quoted words)
    "the a an of to in is was for on that with as by at from it this be are "
    "speculative decoding draft token accept reject verify model server "
    "request stream prompt metric counter gauge histogram latency throughput "
    "cache block queue batch schedule running waiting prefill decode step "
    "one two three four five six seven eight nine ten hello world python "
    "monitor terminal window graph rate ratio length window spec ngram eagle"
).split()
VOCAB = 1024


def corpus(seed: int, n_lines: int = 400) -> list[str]:
    """The tokenizer's training text: the Zen of Python, random sentences and numbers."""
    rng = random.Random(seed)
    with contextlib.redirect_stdout(io.StringIO()):
        import this  # a few KB of text that every Python has
    lines = codecs.decode(this.s, "rot13").splitlines()
    for i in range(n_lines):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 16))]
        lines.append(" ".join(words) + f" {i}.")
    lines += [str(i) for i in range(1000)]
    return lines


def build_tokenizer(out_dir: Path, seed: int) -> Any:
    """Train a byte-level BPE tokenizer and save it as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(seed), trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=4096,
    )
    # A minimal chat template so /v1/chat/completions works too.
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    fast.save_pretrained(str(out_dir))
    return fast


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    # Head dim = hidden / heads: 64 by default, a size every attention backend supports.
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--intermediate", type=int, default=512)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    args = parser.parse_args()

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    args.out_dir.mkdir(parents=True, exist_ok=True)
    fast = build_tokenizer(args.out_dir, args.seed)
    vocab_padded = (len(fast) + 63) // 64 * 64  # some kernels like a multiple of 64
    torch.manual_seed(args.seed)
    config = LlamaConfig(
        vocab_size=vocab_padded,
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=4096,
        rms_norm_eps=1e-5,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(str(args.out_dir), safe_serialization=True)
    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"out": str(args.out_dir), "params": params, "vocab": len(fast)}))


if __name__ == "__main__":
    main()
