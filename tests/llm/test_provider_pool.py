"""ProviderPool: the provider clients one sweep's runs share -- a bounded number of runs per client,
the least busy client first, one set per endpoint, all closed by whoever owns the pool."""

from __future__ import annotations

from physlab.llm.defaults import ModelDefaults
from physlab.llm.meter import RunMeter
from physlab.llm.models import ProviderPool, RunModels

SPEC = "openai:standin"
BASE = "http://127.0.0.1:9/v1"  # nothing listens there; no request is made


def _lease(pool: ProviderPool, spec: str = SPEC, api_base: str = BASE):
    return pool.acquire(spec, api_base=api_base, api_key_env=None, defaults=ModelDefaults())


def _one_of(model, models) -> bool:
    return any(model is m for m in models)


def _closed(model) -> bool:
    return model.client.is_closed()  # the openai SDK client behind the pydantic-ai model


async def test_a_client_is_shared_by_at_most_runs_per_client_leases():
    pool = ProviderPool(runs_per_client=3)
    a = [_lease(pool) for _ in range(3)]
    assert a[0] is a[1] is a[2] and pool.clients == 1
    b = _lease(pool)  # a 4th concurrent run: a new client
    assert b is not a[0] and pool.clients == 2
    pool.release(a[0])  # now a's client has 2 runs, b's 1
    assert _lease(pool) is b  # the least busy one, not the first one
    # a: 2 of 3, b: 2 of 3
    for _ in range(5):
        pool.release(b)  # more releases than leases: b's count stops at zero
    for _ in range(4):  # 1 more run fits on a, 3 on b
        assert _one_of(_lease(pool), (a[0], b))
    assert pool.clients == 2
    c = _lease(pool)  # both full
    assert not _one_of(c, (a[0], b)) and pool.clients == 3
    await pool.aclose()


async def test_different_endpoints_and_models_get_different_clients():
    pool = ProviderPool(runs_per_client=8)
    m = _lease(pool)
    other_base = _lease(pool, api_base="http://127.0.0.1:10/v1")
    other_spec = _lease(pool, spec="openai:other")
    assert len({id(m), id(other_base), id(other_spec)}) == 3
    assert str(other_base.client.base_url).startswith("http://127.0.0.1:10/v1")
    assert other_spec.model_name == "other"
    assert _lease(pool) is m and pool.clients == 3
    await pool.aclose()


async def test_aclose_closes_every_client_and_empties_the_pool():
    pool = ProviderPool(runs_per_client=1)
    models = [_lease(pool) for _ in range(3)] + [_lease(pool, spec="openai:other")]
    assert len({id(x) for x in models}) == 4
    assert not any(_closed(x) for x in models)
    await pool.aclose()
    assert all(_closed(x) for x in models)
    assert pool.clients == 0
    fresh = _lease(pool)  # a pool can be used again after closing: new clients
    assert not _one_of(fresh, models) and not _closed(fresh)
    await pool.aclose()


async def test_run_models_lease_from_the_pool_and_return_the_lease_without_closing():
    pool = ProviderPool(runs_per_client=1)
    run1 = RunModels(SPEC, meter=RunMeter(), api_base=BASE, providers=pool)
    m1 = run1.for_role("solver").wrapped
    assert run1.for_role("judge").wrapped is m1  # one provider model for every role of a run
    run2 = RunModels(SPEC, meter=RunMeter(), api_base=BASE, providers=pool)
    assert run2.for_role("solver").wrapped is not m1  # run1 holds the only lease of m1
    assert pool.clients == 2
    await run1.aclose()
    assert not _closed(m1)  # the pool's client stays open for the next run
    run3 = RunModels(SPEC, meter=RunMeter(), api_base=BASE, providers=pool)
    assert run3.for_role("solver").wrapped is m1  # run1's lease came back
    assert pool.clients == 2
    await run2.aclose()
    await run3.aclose()
    await pool.aclose()
    assert _closed(m1)


async def test_run_models_without_a_pool_close_their_own_client():
    run = RunModels(SPEC, meter=RunMeter(), api_base=BASE)
    m = run.for_role("solver").wrapped
    assert not _closed(m)
    await run.aclose()
    assert _closed(m)


async def test_the_direct_client_is_one_per_endpoint_however_many_runs():
    # aiohttp's connector does not re-check idle connections per request (httpcore does), so
    # sharding would only cost a model profile and a session per extra client
    pool = ProviderPool(runs_per_client=2)
    direct = ModelDefaults(client="direct")
    models = [pool.acquire(SPEC, api_base=BASE, api_key_env=None, defaults=direct) for _ in range(5)]
    assert all(m is models[0] for m in models) and pool.clients == 1
    other = pool.acquire(SPEC, api_base="http://127.0.0.1:10/v1", api_key_env=None, defaults=direct)
    assert other is not models[0] and pool.clients == 2
    await pool.aclose()
