/* Helper for header_inline.c: inline functions in headers are not rewritten (only the
 * main file of a translation unit is); calls to them are. */
static inline int hdr_add(int a, int b) { return a + b; }
