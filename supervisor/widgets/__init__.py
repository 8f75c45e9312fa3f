"""The supervisor's widgets, one per module, grouped by screen area."""
