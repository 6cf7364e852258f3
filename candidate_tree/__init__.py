"""The candidate tree: LEKA's crash-safe memory of every candidate, its lineage and measurements."""

from candidate_tree.schema import DB_NAME, FRONTIER, Node, NodeStatus, derive_status
from candidate_tree.store import Tree

__all__ = ["DB_NAME", "FRONTIER", "Node", "NodeStatus", "Tree", "derive_status"]
