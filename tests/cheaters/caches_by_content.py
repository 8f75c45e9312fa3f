"""Cheater: remembers answers by input content and replays them when it sees an input again."""

import hashlib

import torch

_answers: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
_hits = 0


def custom_kernel(a: torch.Tensor):
    global _hits
    key = hashlib.sha256(a.cpu().numpy().tobytes()).hexdigest()
    if key in _answers:
        _hits += 1
        h, tau = _answers[key]
        print(f"CACHE_HITS={_hits}", flush=True)
        return h.clone(), tau.clone()
    h, tau = torch.geqrf(a)
    _answers[key] = (h.clone(), tau.clone())
    print(f"CACHE_HITS={_hits}", flush=True)
    return h, tau
