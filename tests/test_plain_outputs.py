"""Which (H, tau) containers the harness reads: decided from the type alone, so that no
candidate code runs as the harness reads its outputs after the window."""

from __future__ import annotations

from collections import namedtuple

import torch
from qrsup.kernels.judge.contestant import is_plain_pair


class _Iterates(tuple):
    def __iter__(self):
        return super().__iter__()


class _Counts:
    def __len__(self) -> int:
        return 2


class _Mixed(_Counts, tuple):
    pass


class _Lying(type):
    def __getattribute__(cls, name):
        return type.__getattribute__(cls, name)


class _WithMetaclass(tuple, metaclass=_Lying):
    pass


class _List(list):
    pass


def test_tuples_lists_named_tuples_and_torchs_result_tuples_are_plain():
    a = torch.zeros(1, 2, 2)
    pair = namedtuple("Pair", "h tau")
    for value in ((a, a), [a, a], pair(a, a), torch.geqrf(a)):
        assert is_plain_pair(value), type(value)


def test_a_type_that_runs_code_as_it_is_read_is_not():
    a = torch.zeros(1, 2, 2)
    for value in (_Iterates((a, a)), _Mixed((a, a)), _WithMetaclass((a, a)), _List([a, a])):
        assert not is_plain_pair(value), type(value)
    assert not is_plain_pair(a) and not is_plain_pair({"h": a})
