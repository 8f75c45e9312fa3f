"""Cheater: allocates memory without bound."""

import torch


def custom_kernel(a):
    hoard = []
    while True:
        hoard.append(torch.ones(64 * 2**20 // 4))
