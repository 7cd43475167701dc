"""The verbs of `manage.py auto` (cli/management/commands/auto.py builds the parser and
dispatches): one module per group, each with a VERBS table of `do_<verb>(cli, target,
recipe_args, options)` functions that write to the command's streams and raise CommandError.
`auto quota|price …` are in cli/spend.py, `auto mcp …` in cli/mcp.py. The API never imports
this package: what both front doors need lives in the domain apps' services and selectors.
"""
