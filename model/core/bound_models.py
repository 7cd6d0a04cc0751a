"""The names of the LP models a certified lower bound comes from.

A stored certificate names its model (the `model` field of a library certificate, and
`memplace lib improve/bounds --lp-model`); the models themselves, their certificates and
their checks are in `memplace.solvers.certificate`. The names live here, with no
imports, so that the command line can offer them without loading the solvers.
"""
from __future__ import annotations

ACCESS_MODEL = "residency-access"
CAPPED_MODEL = "residency-relaxation-capped"
DELIVERY_MODEL = "residency-delivery"
TREE_MODEL = "residency-delivery-tree"
START_TREE_MODEL = "residency-relaxation-tree"
COVER_TREE_MODEL = "residency-delivery-cover-tree"
ROTATION_MODEL = "residency-rotation"
ROTATION_LEVELS_MODEL = "residency-rotation-levels"
STEP_COVER_MODEL = "residency-delivery-step-cover"
STEP_COVER_TREE_MODEL = "residency-delivery-step-cover-tree"
UNITS_TREE_MODEL = "residency-delivery-units-tree"
START_COLUMN_MODEL = "residency-delivery-start-tree"
SLOT_TREE_MODEL = "residency-slot-tree"
LP_MODELS = ("static-milp", "residency-relaxation", ACCESS_MODEL, CAPPED_MODEL, DELIVERY_MODEL,
             TREE_MODEL, START_TREE_MODEL, COVER_TREE_MODEL, ROTATION_MODEL, STEP_COVER_MODEL,
             STEP_COVER_TREE_MODEL, ROTATION_LEVELS_MODEL, UNITS_TREE_MODEL,
             START_COLUMN_MODEL, SLOT_TREE_MODEL)
# models whose certificate stores the ceiling (a valid latency) their columns are capped by
CEILING_MODELS = (ACCESS_MODEL, CAPPED_MODEL, DELIVERY_MODEL, TREE_MODEL, START_TREE_MODEL,
                  COVER_TREE_MODEL, STEP_COVER_MODEL, STEP_COVER_TREE_MODEL, UNITS_TREE_MODEL,
                  START_COLUMN_MODEL, SLOT_TREE_MODEL)
# models solved only when asked for by name (`improve --lp-model`), per problem
ON_REQUEST_MODELS = {"residency": (TREE_MODEL, START_TREE_MODEL, COVER_TREE_MODEL, ROTATION_MODEL,
                                    STEP_COVER_MODEL, STEP_COVER_TREE_MODEL, ROTATION_LEVELS_MODEL,
                                    UNITS_TREE_MODEL, START_COLUMN_MODEL, SLOT_TREE_MODEL)}
# the residency problem's (`memplace lib bounds` solves only these)
RESIDENCY_LP_MODELS = tuple(model for model in LP_MODELS if model.startswith("residency-"))
