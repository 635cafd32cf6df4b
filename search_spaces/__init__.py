"""Ready-made search spaces. They import ``nasflow``; ``nasflow`` never imports them."""
