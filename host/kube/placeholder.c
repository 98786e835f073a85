/* Placeholder so the kube library is never empty; removed when host/kube lands. */
int lop_kube_placeholder(void);
int lop_kube_placeholder(void) { return 0; }
