"""Where a judge run executes: on this host (`local`), or as a Ray task on a cluster (`ray`).

Either way the run is the same judge (runner → referee → contestant behind the sandbox); an
executor only decides which machine's runner starts it and carries the candidate there by value.
"""
