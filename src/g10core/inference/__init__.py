"""LLM inference with weights, KV cache and activations offloaded to host memory and SSD.

:mod:`g10core.workload.llm` writes the trace of one batch of requests (prefill, then decode
steps); :mod:`g10core.inference.schedule` runs it under an offloading system's schedule
(FlexGen, ZeRO-Inference, Hugging Face Accelerate) on a machine (GPU, host memory, SSD) and
reports time to first token, time per output token and tokens/s;
:mod:`g10core.experiments.inference` holds the published tables we compare with
(``g10sim reproduce inference``).
"""
