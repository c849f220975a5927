"""What both sides of OAuth use: errors, `WWW-Authenticate` challenges, metadata documents, the
principal of a token (`AuthInfo`), JWT signing helpers, and small utilities."""
