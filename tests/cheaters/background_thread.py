"""Cheater: returns at once and does the real work on a background thread, outside the timer."""

import threading

import torch


def _fill(a: torch.Tensor, h: torch.Tensor, tau: torch.Tensor) -> None:
    for _ in range(400):  # enough hidden work that no noise allowance covers it
        result_h, result_tau = torch.geqrf(a)
    h.copy_(result_h)
    tau.copy_(result_tau)


def custom_kernel(a: torch.Tensor):
    h = torch.empty_like(a)
    tau = torch.empty(a.shape[0], a.shape[1])
    threading.Thread(target=_fill, args=(a.clone(), h, tau), daemon=True).start()
    return h, tau
