"""The protected-resource side of OAuth: `ProtectedResource`, the bearer-token ASGI middleware,
token verifiers (JWT, introspection) and the DPoP proof checker."""
