"""What the tests share, a module for each thing it gives; tests/conftest.py makes fixtures of
some of it, and no test module imports another (tests/test_layers.py checks).

paths (the checkout, fixtures, shared/), marks (root, shared/), cpus (the CPU a worker measures
on), schedule (the long tests spread over pytest-xdist's workers), nvme_tier (the NVMe tier's
guest boot), fio (plumbing jobs, fio processes), devices (file systems, tmpfs, loop devices),
nobody (a command as user nobody, through a bind mount), sigint, cli (iolab in the test's
process), notebooks (small notebooks), results (made-up recorded results), hosts (network
namespaces left), fake_tools, seed_commands (the write-ups' fio lines), browser (chromium),
jupyterlab (a server and a page on it), reading (how a notebook reads in JupyterLab)."""
