"""Mixed-precision Adam(W) with fp32 master weights, for capturing mixed-precision training (needs torch).

Mixed-precision training as Micikevicius et al. (ICLR 2018, "Mixed Precision Training",
section 3.1) describe it and as ZeRO (Rajbhandari et al., SC 2020, section 3.1) counts it:
the model's parameters, gradients and activations are 16-bit (here bfloat16 or float16),
and the optimizer keeps an fp32 copy of every parameter (the master weights) besides
Adam's two fp32 moments, 2 + 2 + 4 + 4 + 4 = 16 bytes per parameter of model state.

Each step, per parameter: the 16-bit gradient is widened to fp32, Adam(W) (Kingma & Ba,
ICLR 2015, Algorithm 1; decoupled weight decay of Loshchilov & Hutter, ICLR 2019) updates
the master weights and the moments in fp32, and the result is written back to the 16-bit
parameter.  On the meta device only the kernels matter: the step reads the 16-bit
gradient, reads and writes the three fp32 states, and overwrites the 16-bit parameter.
No loss scaling (bfloat16 has fp32's exponent range; an fp16 run would scale the loss,
one elementwise kernel per gradient more, not recorded here).
"""
from __future__ import annotations

import math

import torch

MASTER_DTYPES = {"fp32": torch.float32, "float32": torch.float32}


class MasterWeightAdamW(torch.optim.Optimizer):
    """AdamW over 16-bit parameters with fp32 master weights and moments (see the module docstring).

    State per parameter: ``master`` (fp32 copy), ``exp_avg``, ``exp_avg_sq`` (fp32) and
    ``step`` (a Python int: the step counter lives on the host).
    """

    def __init__(self, params, lr: float = 1e-4, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.01,
                 master_dtype=torch.float32):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))
        self.master_dtype = master_dtype

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["master"] = p.detach().to(self.master_dtype)
                    state["exp_avg"] = torch.zeros_like(state["master"])
                    state["exp_avg_sq"] = torch.zeros_like(state["master"])
                state["step"] += 1
                t = state["step"]
                master, m, v = state["master"], state["exp_avg"], state["exp_avg_sq"]
                g = p.grad.to(self.master_dtype)               # widen the 16-bit gradient
                if wd:
                    master.mul_(1.0 - lr * wd)                 # decoupled weight decay
                m.lerp_(g, 1.0 - beta1)                        # m = beta1 m + (1 - beta1) g
                v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
                step_size = lr / (1.0 - beta1 ** t)
                denom = (v.sqrt() / math.sqrt(1.0 - beta2 ** t)).add_(eps)
                master.addcdiv_(m, denom, value=-step_size)
                p.copy_(master)                                # narrow back into the 16-bit parameter
        return loss
