"""Largest tensor first: evict the tensor with the most pages on the GPU.

The rule of issue 34.  When it was offered the running kernel's tensors too, it evicted a
waiting kernel's own largest tensor to bring in its other pages, for ever (BERT-256 under
Base UVM ran into the replay's budget and failed); the replay no longer offers them
(docs/guide/eviction.md, "What a rule is offered").
"""


def score(now_kernel, tensor, resident_pages, size_pages, last_use_kernel, next_use_kernel, arrival_seq):
    return float(resident_pages)
