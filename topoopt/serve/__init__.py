"""``topoopt serve``: topoopt over HTTP, for schedulers not written in Python (docs/service.md).

=====================================  =============================================
module                                 what it holds
=====================================  =============================================
:mod:`topoopt.serve.app`               the ASGI application (Starlette): handlers, the
                                       token check, metrics, the endpoint table
:mod:`topoopt.serve.api`               JSON Schemas of requests and answers
:mod:`topoopt.serve.openapi`           the OpenAPI document, from the endpoint table
:mod:`topoopt.serve.pool`              worker processes, bounded queue, hard deadlines
:mod:`topoopt.serve.zygote`            the fork server that starts workers
:mod:`topoopt.serve.work`              what a worker runs per request
:mod:`topoopt.serve.metrics`           the metrics, on prometheus_client
:mod:`topoopt.serve.server`            uvicorn with graceful shutdown
=====================================  =============================================

The web stack (``pip install 'topoopt[serve]'``) is imported only by ``topoopt serve`` and
:mod:`topoopt.client`, never by ``topoopt solve`` or ``import topoopt``.
"""
