"""The candidate tree: LEKA's crash-safe memory of every candidate, its lineage and measurements."""

from candidate_tree.store import DB_NAME, FRONTIER, Node, NodeStatus, Tree, derive_status

__all__ = ["DB_NAME", "FRONTIER", "Node", "NodeStatus", "Tree", "derive_status"]
