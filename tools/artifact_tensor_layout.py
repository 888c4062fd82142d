"""Tabulate where the published simulator's Tensor objects sit in its heap.

    python tools/artifact_tensor_layout.py inceptionv3=I.err resnet152=R.err senet154=S.err > src/g10core/policies/data/artifact_tensor_layout.csv

The published simulator (github.com/platformxlab/G10, commit de2c8c6, Apache-2.0) walks a
kernel's tensors as a pointer-keyed ``std::unordered_set``, so the order it allocates,
waits for and prefetches them in follows the addresses of its ``Tensor`` objects
(``g10core.policies.tensorsim.libstdcxx_set_order``).  Each input file is the standard error of one
run of that simulator (built with g++ 12.2 -O3 against glibc 2.36) to which one statement
was added in main.cc, after the front end and before the FlashNeuron/GDS block: for every
tensor of ``tensor_list``, print ``TADDR <tensor_id> <address>``.  For the CNNs, whose
tensors the front end creates after it has parsed the whole network, the layout depends on
the model only (the same allocations at every batch size) except for the cuDNN workspace
tensors a batch adds at the end, so each is measured at its batch with the most tensors
(Inceptionv3 1536, ResNet152 256, SENet154 256).  BERT and ViT are left out: their front
end creates the first tensors (BERT: 0-62) while it reads the network and the configuration,
so where those lie moves with the length of the paths in the configuration; with the layout
of our runs the published simulator itself runs out of memory on FlashNeuron BERT-512, which
the published run completed, so it is not the layout that made the published numbers.

Output: one row per run of Tensor objects that lie back to back, ``model, first_tensor,
last_tensor, offset_bytes``: tensor ``t`` of ``[first_tensor, last_tensor]`` sits
``offset_bytes + 112 * (t - first_tensor)`` bytes after tensor 0 (112 bytes: one Tensor
in glibc's chunk size).
"""
from __future__ import annotations

import sys

STRIDE = 112


def read(path):
    addr = {}
    with open(path) as fh:
        for line in fh:
            if line.startswith("TADDR "):
                _, tid, a = line.split()
                addr[int(tid)] = int(a, 16)
    ids = sorted(addr)
    if ids != list(range(len(ids))):
        raise SystemExit(f"{path}: tensor ids are not 0..{len(ids) - 1}")
    return [addr[i] - addr[0] for i in ids]


def runs(offsets):
    out = []
    for t, off in enumerate(offsets):
        if out and off == out[-1][2] + STRIDE * (t - out[-1][0]):
            out[-1][1] = t
        else:
            out.append([t, t, off])
    return out


def main(argv):
    print("model,first_tensor,last_tensor,offset_bytes")
    for arg in argv:
        model, path = arg.split("=", 1)
        for first, last, off in runs(read(path)):
            print(f"{model},{first},{last},{off}")


if __name__ == "__main__":
    main(sys.argv[1:])
