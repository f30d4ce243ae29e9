"""`python -m kosong`: the `kosong` command."""

from kosong.cli import main

main()
