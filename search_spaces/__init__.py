"""Ready-made search spaces, installed as ``nasflow.search_spaces`` (the repository keeps
them in its root folder ``search_spaces/``). They import ``nasflow``; nasflow's own
packages never import them."""
