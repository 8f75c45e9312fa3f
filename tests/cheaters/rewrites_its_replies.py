"""Cheater: divides the claimed time of each `go` reply by ten, through the JSON encoding the
harness used for its replies: `json.dumps` rebound, and `json.JSONEncoder.encode`, which
`json.dumps` calls on the class, patched too. The referee's own window around the call bounds a
claim only to within its allowance: on the CPU, rebinding `json.dumps` alone passed every smoke
spec, at 8.9 times torch.geqrf's speed. The harness now encodes through a C encoder it made at
import."""

import json

import torch

_dumps, _encode = json.dumps, json.JSONEncoder.encode
_told: list[bool] = []


def _smaller_claim(message):
    if isinstance(message, dict) and "elapsed_ns" in message:
        if not _told:  # what the judge's test looks for in the output
            print("REPLY REWRITTEN", flush=True)
            _told.append(True)
        return {**message, "elapsed_ns": message["elapsed_ns"] // 10}
    return message


def _dumps_with_a_smaller_claim(message, *args, **kwargs):
    return _dumps(_smaller_claim(message), *args, **kwargs)


def _encode_with_a_smaller_claim(self, message):
    return _encode(self, _smaller_claim(message))


json.dumps = _dumps_with_a_smaller_claim
json.JSONEncoder.encode = _encode_with_a_smaller_claim


def custom_kernel(a: torch.Tensor):
    return torch.geqrf(a)
