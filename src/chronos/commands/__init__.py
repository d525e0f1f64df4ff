"""The `chronos` subcommands, each an argparse shell (`add_arguments`, `run`) over the library it calls:
capture (chronos.triton), tune (chronos.tuning), optimize (chronos.optimize), run-deployed (chronos.triton).
Nothing in the library or the stages imports a command."""
