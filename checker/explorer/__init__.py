"""`kmc explore`: a page served on 127.0.0.1 that walks any model's state space on demand. state.py
holds the walk and the answers, page.py the page, server.py the HTTP server."""
