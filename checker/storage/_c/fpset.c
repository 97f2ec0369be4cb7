/* A visited set of 64-bit fingerprints with each one's parent, in C: fpset.py's VisitedFingerprints.
 *
 * Open addressing with linear probing over (fingerprint, parent) slots, at most three quarters
 * full: a fingerprint is already uniformly spread, so its low bits pick its slot. 16 bytes a slot,
 * 21 to 32 bytes a state, one memory access a lookup. Fingerprint 0 marks an empty slot; the
 * state whose fingerprint is 0 (one in 2^64) is kept beside the table.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint64_t fp;
    uint64_t parent;
} Entry;

typedef struct {
    PyObject_HEAD
    Entry *table;
    Py_ssize_t slots; /* a power of 2 */
    Py_ssize_t count; /* including the zero fingerprint */
    int has_zero;
    uint64_t zero_parent;
} VisitedFingerprints;

static Entry *find(VisitedFingerprints *self, uint64_t fp) {
    Py_ssize_t mask = self->slots - 1;
    Py_ssize_t at = (Py_ssize_t)(fp & (uint64_t)mask);
    Entry *table = self->table;
    while (table[at].fp != 0 && table[at].fp != fp) {
        at = (at + 1) & mask;
    }
    return &table[at];
}

static int grow(VisitedFingerprints *self) {
    Py_ssize_t slots = self->slots ? 2 * self->slots : 1024;
    Entry *table = PyMem_Calloc((size_t)slots, sizeof(Entry));
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Entry *old = self->table;
    Py_ssize_t old_slots = self->slots;
    self->table = table;
    self->slots = slots;
    for (Py_ssize_t i = 0; i < old_slots; i++) {
        if (old[i].fp != 0) {
            *find(self, old[i].fp) = old[i];
        }
    }
    PyMem_Free(old);
    return 0;
}

/* 1 if fp was new (and is now kept with parent), 0 if it was there, -1 on error. */
static int add(VisitedFingerprints *self, uint64_t fp, uint64_t parent) {
    if (fp == 0) {
        if (self->has_zero) {
            return 0;
        }
        self->has_zero = 1;
        self->zero_parent = parent;
        self->count++;
        return 1;
    }
    if (4 * (self->count + 1) > 3 * self->slots && grow(self) < 0) {
        return -1;
    }
    Entry *entry = find(self, fp);
    if (entry->fp == fp) {
        return 0;
    }
    entry->fp = fp;
    entry->parent = parent;
    self->count++;
    return 1;
}

/* Linear probing's deletion: the entries after the hole that would no longer be found move back. */
static void remove_fp(VisitedFingerprints *self, uint64_t fp) {
    if (fp == 0) {
        self->count -= self->has_zero;
        self->has_zero = 0;
        return;
    }
    Entry *table = self->table;
    Py_ssize_t mask = self->slots - 1;
    Entry *entry = find(self, fp);
    if (entry->fp != fp) {
        return;
    }
    Py_ssize_t hole = entry - table;
    Py_ssize_t at = (hole + 1) & mask;
    while (table[at].fp != 0) {
        Py_ssize_t home = (Py_ssize_t)(table[at].fp & (uint64_t)mask);
        /* the entry at `at` may fill the hole if its home is not cyclically in (hole, at] */
        int stays = hole <= at ? (hole < home && home <= at) : (hole < home || home <= at);
        if (!stays) {
            table[hole] = table[at];
            hole = at;
        }
        at = (at + 1) & mask;
    }
    table[hole].fp = 0;
    table[hole].parent = 0;
    self->count--;
}

static int contains(VisitedFingerprints *self, uint64_t fp) {
    if (fp == 0) {
        return self->has_zero;
    }
    return self->slots != 0 && find(self, fp)->fp == fp;
}

static int as_words(PyObject *data, Py_buffer *view) {
    if (PyObject_GetBuffer(data, view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (view->len % 8 != 0) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "expected native uint64 words");
        return -1;
    }
    return 0;
}

/* add_new(fps, parents) -> bytes: of the fingerprints, in order, those not in the set (each one's
 * first occurrence), kept with their parents; their positions as native int64 words. */
static PyObject *add_new(VisitedFingerprints *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add_new(fingerprints, parents) takes two buffers of uint64");
        return NULL;
    }
    Py_buffer fps_view, parents_view;
    if (as_words(args[0], &fps_view) < 0) {
        return NULL;
    }
    if (as_words(args[1], &parents_view) < 0) {
        PyBuffer_Release(&fps_view);
        return NULL;
    }
    PyObject *out = NULL;
    Py_ssize_t n = fps_view.len / 8;
    if (parents_view.len != fps_view.len) {
        PyErr_SetString(PyExc_ValueError, "add_new: as many parents as fingerprints");
    } else {
        int64_t *positions = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
        if (positions == NULL) {
            PyErr_NoMemory();
        } else {
            const uint64_t *fps = fps_view.buf, *parents = parents_view.buf;
            Py_ssize_t found = 0;
            int status = 0;
            for (Py_ssize_t i = 0; i < n && status >= 0; i++) {
                status = add(self, fps[i], parents[i]);
                if (status == 1) {
                    positions[found++] = i;
                }
            }
            if (status >= 0) {
                out = PyBytes_FromStringAndSize((const char *)positions, found * (Py_ssize_t)sizeof(int64_t));
            }
            PyMem_Free(positions);
        }
    }
    PyBuffer_Release(&fps_view);
    PyBuffer_Release(&parents_view);
    return out;
}

/* any_new(fps) -> bool: whether the set lacks any of the fingerprints. */
static PyObject *any_new(VisitedFingerprints *self, PyObject *data) {
    Py_buffer view;
    if (as_words(data, &view) < 0) {
        return NULL;
    }
    const uint64_t *fps = view.buf;
    Py_ssize_t n = view.len / 8;
    int found = 0;
    for (Py_ssize_t i = 0; i < n && !found; i++) {
        found = !contains(self, fps[i]);
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

static PyObject *parent_of(VisitedFingerprints *self, PyObject *arg) {
    uint64_t fp = PyLong_AsUnsignedLongLong(arg);
    if (fp == (uint64_t)-1 && PyErr_Occurred()) {
        return NULL;
    }
    if (!contains(self, fp)) {
        PyErr_SetObject(PyExc_KeyError, arg);
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(fp == 0 ? self->zero_parent : find(self, fp)->parent);
}

static int as_fingerprint(PyObject *arg, uint64_t *fp) {
    *fp = PyLong_AsUnsignedLongLong(arg);
    return *fp == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

/* add(fp, parent) -> bool: whether fp was new (it is kept now, with parent; None: an initial state,
 * its own parent). */
static PyObject *add_one(VisitedFingerprints *self, PyObject *const *args, Py_ssize_t nargs) {
    uint64_t fp, parent;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add(fp, parent) takes two arguments");
        return NULL;
    }
    if (as_fingerprint(args[0], &fp) < 0) {
        return NULL;
    }
    if (args[1] == Py_None) {
        parent = fp;
    } else if (as_fingerprint(args[1], &parent) < 0) {
        return NULL;
    }
    int status = add(self, fp, parent);
    if (status < 0) {
        return NULL;
    }
    return PyBool_FromLong(status);
}

/* visited[fp]: fp's parent, None for an initial state (its own parent). */
static PyObject *visited_getitem(VisitedFingerprints *self, PyObject *arg) {
    uint64_t fp;
    if (as_fingerprint(arg, &fp) < 0) {
        return NULL;
    }
    if (!contains(self, fp)) {
        PyErr_SetObject(PyExc_KeyError, arg);
        return NULL;
    }
    uint64_t parent = fp == 0 ? self->zero_parent : find(self, fp)->parent;
    if (parent == fp) {
        Py_RETURN_NONE;
    }
    return PyLong_FromUnsignedLongLong(parent);
}

static int visited_setitem(VisitedFingerprints *self, PyObject *key, PyObject *value) {
    uint64_t fp;
    if (as_fingerprint(key, &fp) < 0) {
        return -1;
    }
    if (value != NULL) {
        PyErr_SetString(PyExc_TypeError, "add fingerprints with add(fp, parent)");
        return -1;
    }
    if (!contains(self, fp)) {
        PyErr_SetObject(PyExc_KeyError, key);
        return -1;
    }
    remove_fp(self, fp);
    return 0;
}

static PyObject *table_bytes(VisitedFingerprints *self, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t(self->slots * (Py_ssize_t)sizeof(Entry));
}

static int visited_init(VisitedFingerprints *self, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "VisitedFingerprints() takes no arguments");
        return -1;
    }
    return 0;
}

static void visited_dealloc(VisitedFingerprints *self) {
    PyMem_Free(self->table);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t visited_len(VisitedFingerprints *self) { return self->count; }

static int visited_contains(VisitedFingerprints *self, PyObject *arg) {
    uint64_t fp = PyLong_AsUnsignedLongLong(arg);
    if (fp == (uint64_t)-1 && PyErr_Occurred()) {
        return -1;
    }
    return contains(self, fp);
}

static PyMethodDef visited_methods[] = {
    {"add_new", (PyCFunction)(void (*)(void))add_new, METH_FASTCALL,
     "add_new(fps, parents) -> bytes: the positions (int64) of the fingerprints not held yet, now kept."},
    {"any_new", (PyCFunction)any_new, METH_O, "any_new(fps) -> bool: whether any of fps is not held."},
    {"parent_of", (PyCFunction)parent_of, METH_O, "parent_of(fp) -> int: the parent kept with fp."},
    {"table_bytes", (PyCFunction)table_bytes, METH_NOARGS, "table_bytes() -> int: the memory the table holds."},
    {"add", (PyCFunction)(void (*)(void))add_one, METH_FASTCALL,
     "add(fp, parent) -> bool: whether fp was new; it is kept with parent (None: its own)."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods visited_as_sequence = {
    .sq_length = (lenfunc)visited_len,
    .sq_contains = (objobjproc)visited_contains,
};

static PyMappingMethods visited_as_mapping = {
    .mp_length = (lenfunc)visited_len,
    .mp_subscript = (binaryfunc)visited_getitem,
    .mp_ass_subscript = (objobjargproc)visited_setitem,
};

static PyTypeObject VisitedFingerprintsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kmc.checker.storage._fpset.VisitedFingerprints",
    .tp_basicsize = sizeof(VisitedFingerprints),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "VisitedFingerprints(): 64-bit fingerprints, each with its parent's.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)visited_init,
    .tp_dealloc = (destructor)visited_dealloc,
    .tp_methods = visited_methods,
    .tp_as_sequence = &visited_as_sequence,
    .tp_as_mapping = &visited_as_mapping,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fpset", "The in-memory visited set of fingerprints, in C.", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fpset(void) {
    if (PyType_Ready(&VisitedFingerprintsType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "VisitedFingerprints", (PyObject *)&VisitedFingerprintsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
