"""The fleet console (``configctl serve``, docs/console.md): a live web view of the fleet, read-only by default.

* :mod:`.documents`: the JSON documents the console serves, built by the CLI's own ``-o json`` code;
* :mod:`.hub`: ONE set of ZooKeeper watches per server, keeping the shared documents current;
* :mod:`.fanout`: server-sent events to every open browser, each with a bounded queue;
* :mod:`.security`: where it may listen, the bearer token, and the headers every response carries;
* :mod:`.views`: the pages (server-rendered, every stored string escaped);
* :mod:`.actions`: what it may do when ``serve --allow-actions`` says so (abort a rollout, as the CLI);
* :mod:`.app`: the Starlette application that ties them together.

Nothing here writes to ZooKeeper but :mod:`.actions`, through a store of its own that exists only
with ``--allow-actions``.
"""
