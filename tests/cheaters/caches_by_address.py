"""Cheater: remembers answers by input address and replays them, even for new content."""

import torch

_answers: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}


def custom_kernel(a: torch.Tensor):
    key = (a.data_ptr(), tuple(a.shape))
    if key in _answers:
        h, tau = _answers[key]
        return h.clone(), tau.clone()
    h, tau = torch.geqrf(a)
    _answers[key] = (h.clone(), tau.clone())
    return h, tau
