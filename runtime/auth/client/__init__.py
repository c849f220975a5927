"""The client side of OAuth: the `httpx.Auth` flows (`OAuth`, the machine-to-machine grants),
discovery, token requests, storage, redirect handlers and sign-out."""
