#!/usr/bin/python3
"""Final position error of the dragged cube: distance of its centre of mass at the last step
from its start moved by DISTANCE along +x.

Usage: /usr/bin/python3 scripts/cube_drag_final_error.py SIM_DIR DISTANCE_M [BODY_DOF_OFFSET]

SIM_DIR is an `addsim simulate --out` folder (trajectory.npy: one row of q per step);
BODY_DOF_OFFSET is the cube's first DOF (default 6: the scene's second rigid body after the
end-effector; the first three DOFs of a rigid body are its centre of mass).
"""
import sys

import numpy as np


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    q = np.load(f"{argv[1]}/trajectory.npy")
    k = int(argv[3]) if len(argv) > 3 else 6
    start, end = q[0, k:k + 3], q[-1, k:k + 3]
    target = start + np.array([float(argv[2]), 0.0, 0.0])
    print(f"start {start.round(5).tolist()}  end {end.round(5).tolist()}  target {target.round(5).tolist()}  "
          f"error {np.linalg.norm(end - target) * 1000:.2f} mm  moved {np.linalg.norm(end - start) * 1000:.1f} mm")


if __name__ == "__main__":
    main(sys.argv)
