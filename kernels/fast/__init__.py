"""The shipped fast batched geqrf: a Triton blocked compact-WY Householder QR (issue 3)."""
