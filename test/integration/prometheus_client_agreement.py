import sys
print("SKIP: not written yet")
sys.exit(77)
