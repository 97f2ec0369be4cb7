/* The coverage observer's per-state counting (checker/search/observers.py, Coverage.expanded), in C.
 *
 * count_actions(successors, taken, enabled, action_type) adds one to taken[name] for every
 * (action, state) pair of the list and one to enabled[name] for every distinct name among them,
 * where name is the action's first item. It returns True, or False without counting anything when
 * a pair is not a 2-tuple or an action is not exactly action_type with a str name (the caller then
 * counts in Python, which knows every other kind of action label). The Python stays the
 * definition; tests compare the two.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_DISTINCT 64

static int add_one(PyObject *counts, PyObject *name) {
    PyObject *old = PyDict_GetItemWithError(counts, name); /* borrowed */
    if (old == NULL && PyErr_Occurred())
        return -1;
    Py_ssize_t value = 0;
    if (old != NULL) {
        value = PyLong_AsSsize_t(old);
        if (value == -1 && PyErr_Occurred())
            return -1;
    }
    PyObject *now = PyLong_FromSsize_t(value + 1);
    if (now == NULL)
        return -1;
    int failed = PyDict_SetItem(counts, name, now);
    Py_DECREF(now);
    return failed;
}

static PyObject *count_actions(PyObject *self, PyObject *args) {
    PyObject *successors, *taken, *enabled, *action_type;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &successors, &PyDict_Type, &taken, &PyDict_Type,
                          &enabled, &PyType_Type, &action_type))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(successors);
    PyObject *distinct[MAX_DISTINCT];
    int ndistinct = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* every label must be one this code reads: else count nothing */
        PyObject *pair = PyList_GET_ITEM(successors, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2)
            Py_RETURN_FALSE;
        PyObject *action = PyTuple_GET_ITEM(pair, 0);
        if ((PyObject *)Py_TYPE(action) != action_type || PyTuple_GET_SIZE(action) < 1 ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(action, 0)))
            Py_RETURN_FALSE;
        PyObject *name = PyTuple_GET_ITEM(action, 0);
        int known = 0;
        for (int j = 0; j < ndistinct && !known; j++) /* names are few, and mostly the same object */
            known = distinct[j] == name || PyUnicode_Compare(distinct[j], name) == 0;
        if (known)
            continue;
        if (ndistinct == MAX_DISTINCT) /* more names than a state has: the Python counts them */
            Py_RETURN_FALSE;
        distinct[ndistinct++] = name;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (add_one(taken, PyTuple_GET_ITEM(PyTuple_GET_ITEM(PyList_GET_ITEM(successors, i), 0), 0)) < 0)
            return NULL;
    for (int j = 0; j < ndistinct; j++)
        if (add_one(enabled, distinct[j]) < 0)
            return NULL;
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"count_actions", count_actions, METH_VARARGS,
     "count_actions(successors, taken, enabled, action_type) -> bool: the coverage counts of one expanded state."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, .m_name = "_counts", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__counts(void) { return PyModule_Create(&module); }
