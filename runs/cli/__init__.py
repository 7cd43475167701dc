"""The verbs of `manage.py auto` (runs/management/commands/auto.py builds the parser and
dispatches): one module per group, each with a VERBS table of `do_<verb>(cli, target,
recipe_args, options)` functions that write to the command's streams and raise CommandError.
`auto quota|price …` live with spend (spend/cli.py).
"""
