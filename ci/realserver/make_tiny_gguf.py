"""Write a tiny random-weight Llama as GGUF for llama.cpp's `llama-server`.

Usage: python make_tiny_gguf.py HF_DIR OUT.gguf [--seed 0] [--perturb 0.1]

Reuses the byte-level BPE tokenizer `make_tiny_model.py` saved in HF_DIR (tokenizer.json). Needs
numpy and gguf (both in the vLLM environment). A draft made with the target's seed and
`--perturb P` is the target plus P relative noise: the larger P, the fewer drafts llama.cpp
accepts (0 accepts every draft; 0.1 between 42% and 63% on the real server, by prompt).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

HIDDEN, INTERMEDIATE, LAYERS, HEADS, KV_HEADS = 256, 512, 2, 4, 2  # as make_tiny_model.py
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hf_dir", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--perturb", type=float, default=0.0)
    args = parser.parse_args()

    import gguf

    tokenizer = json.loads((args.hf_dir / "tokenizer.json").read_text(encoding="utf-8"))
    vocab: dict[str, int] = dict(tokenizer["model"]["vocab"])
    added = {t["content"]: t["id"] for t in tokenizer.get("added_tokens", [])}
    vocab.update(added)
    n_vocab = max(vocab.values()) + 1
    tokens = [f"[PAD{i}]" for i in range(n_vocab)]
    for text, i in vocab.items():
        tokens[i] = text
    types = [gguf.TokenType.NORMAL] * n_vocab
    for i in added.values():
        types[i] = gguf.TokenType.CONTROL
    merges = [" ".join(m) if isinstance(m, list) else m for m in tokenizer["model"]["merges"]]

    head_dim = HIDDEN // HEADS
    w = gguf.GGUFWriter(str(args.out), "llama")
    w.add_name("tiny-random-llama")
    w.add_context_length(4096)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(INTERMEDIATE)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(added.get("<s>", 0))
    w.add_eos_token_id(added.get("</s>", 1))
    w.add_pad_token_id(added.get("<pad>", 2))
    w.add_add_bos_token(True)
    w.add_chat_template(CHAT_TEMPLATE)

    rng = np.random.default_rng(args.seed)
    noise = np.random.default_rng(12345)

    def weights(rows: int, cols: int) -> np.ndarray:
        # numpy shape (out, in); GGUF stores it reversed, as llama.cpp expects.
        x = rng.standard_normal((rows, cols))
        if args.perturb:
            x = x + args.perturb * noise.standard_normal((rows, cols))
        return (x * 0.02).astype(np.float32)

    ones = np.ones(HIDDEN, np.float32)
    w.add_tensor("token_embd.weight", weights(n_vocab, HIDDEN))
    w.add_tensor("output_norm.weight", ones)
    w.add_tensor("output.weight", weights(n_vocab, HIDDEN))
    for i in range(LAYERS):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", ones)
        w.add_tensor(p + "attn_q.weight", weights(HEADS * head_dim, HIDDEN))
        w.add_tensor(p + "attn_k.weight", weights(KV_HEADS * head_dim, HIDDEN))
        w.add_tensor(p + "attn_v.weight", weights(KV_HEADS * head_dim, HIDDEN))
        w.add_tensor(p + "attn_output.weight", weights(HIDDEN, HEADS * head_dim))
        w.add_tensor(p + "ffn_norm.weight", ones)
        w.add_tensor(p + "ffn_gate.weight", weights(INTERMEDIATE, HIDDEN))
        w.add_tensor(p + "ffn_up.weight", weights(INTERMEDIATE, HIDDEN))
        w.add_tensor(p + "ffn_down.weight", weights(HIDDEN, INTERMEDIATE))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(json.dumps({"out": str(args.out), "vocab": n_vocab, "bytes": args.out.stat().st_size}))


if __name__ == "__main__":
    main()
