"""TVM RPC: sessions, trackers, remote devices and VMs."""

from __future__ import annotations

from tvm import relax

from leka.backends import get_backend


def rpc_connect(host: str, port: int, key: str = "", session_timeout: int = 0):
    from tvm import rpc

    return rpc.connect(host, port, key=key, session_timeout=session_timeout)


def rpc_request(tracker_host: str, tracker_port: int, key: str, priority: int = 1, session_timeout: int = 0,
                timeout_s: float | None = None):
    """A session from the tracker. `timeout_s` bounds the wait for the tracker's answer: the tracker
    holds a request until a board of `key` is free, so a board that died between the tracker's match
    and our connect (TVM then re-requests) would otherwise leave us waiting forever."""
    from tvm import rpc

    tracker = rpc.connect_tracker(tracker_host, tracker_port)
    if timeout_s is not None:
        tracker._sock.settimeout(max(timeout_s, 0.1))
    try:
        # one try: a retry would reconnect without the timeout; the caller's loop retries instead
        return tracker.request(key, priority=priority, session_timeout=session_timeout, max_retry=1)
    finally:
        tracker.close()


def rpc_tracker_summary(host: str, port: int) -> dict:
    from tvm import rpc

    return dict(rpc.connect_tracker(host, port).summary())


def remote_device(remote, backend: str, index: int = 0):
    return getattr(remote, get_backend(backend).remote_device)(index)


def remote_vm(remote, lib_name: str, backend: str):
    """A Relax VM on the remote, over a library already uploaded with `remote.upload`."""
    rlib = remote.load_module(lib_name)
    dev = remote_device(remote, backend)
    return relax.VirtualMachine(rlib, dev), dev


def remote_runner(remote, lib_name: str, backend: str):
    """A VMRunner whose VM, tensors and time_evaluator live on the remote device."""
    from leka.tvm_adapter.runtime import VMRunner, flatten_outputs

    class RemoteVMRunner(VMRunner):
        def run_device(self, dev_args):
            # a tuple main returns is a handle on the board that RPC cannot index (`for_rpc` unwraps
            # only a 1-tuple): the VM's stateful calls hand its fields over one by one
            self.vm.set_input("main", *dev_args)
            self.vm.invoke_stateful("main")
            return flatten_outputs(self.vm.get_outputs("main"))

    return RemoteVMRunner(remote.load_module(lib_name), remote_device(remote, backend))
