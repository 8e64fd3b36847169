"""measure: one measured run (fio, t/io_uring, or fio's client/server mode) and the grids and searches that run many. Imports core, read, stats, machine and runs."""
