"""Examples shipped with configctl: broker configs for the tour and example listener plugins."""
