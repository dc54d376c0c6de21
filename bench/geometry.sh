# Sourced by the bench scripts: bglrun's flags for the partitions they compare (8 on 2x2x2, 64 on
# 4x4x4, 128 on 4x4x8, 256 on 8x8x4, 512 on 8x8x8, 1,024 on 8x8x8 in virtual-node mode).
geometry() {
  case "$1" in
    8) echo "-np 8 --shape 2x2x2" ;;
    64) echo "-np 64 --shape 4x4x4" ;;
    128) echo "-np 128 --shape 4x4x8" ;;
    256) echo "-np 256 --shape 8x8x4" ;;
    512) echo "-np 512 --shape 8x8x8" ;;
    1024) echo "-np 1024 --shape 8x8x8 --mode vn" ;;
    *) echo "${0##*/}: no geometry for $1 tasks" >&2; exit 2 ;;
  esac
}
