/* The low-level helpers every C successor function shares: reading a state's plain values and
 * frozensets, and building tuples back. Readers return -1 and an exception, 0, or 1 for a value the
 * C does not handle (the Python then runs); makers steal the references they are given and check
 * them, so a caller can pass a failed PyLong_FromLong straight in. Include after <Python.h>.
 */
#ifndef KMC_TUPLES_H
#define KMC_TUPLES_H

/* An exact int into *out: -1 and an exception, 0, or 1 for anything else. */
static inline int tuples_read_long(PyObject *value, long *out) {
    if (!PyLong_CheckExact(value)) {
        return 1;
    }
    long v = PyLong_AsLong(value);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = v;
    return 0;
}

/* True or False into *out as 1 or 0: 0, or 1 for anything else. */
static inline int tuples_read_bool(PyObject *value, int *out) {
    if (value != Py_True && value != Py_False) {
        return 1;
    }
    *out = value == Py_True;
    return 0;
}

/* The items of a frozenset of at most ``max`` items into ``items``, borrowed (the set holds them);
 * -1 and an exception, or their number (more than ``max``: none read, give up). */
static inline Py_ssize_t tuples_set_items(PyObject *set, PyObject **items, Py_ssize_t max) {
    Py_ssize_t n = PySet_GET_SIZE(set);
    if (n > max) {
        return n;
    }
    Py_ssize_t i = 0;
#if PY_VERSION_HEX < 0x030D0000
    Py_ssize_t pos = 0;
    Py_hash_t hash;
    while (i < n && _PySet_NextEntry(set, &pos, &items[i], &hash)) {
        i++;
    }
#else
    PyObject *iter = PyObject_GetIter(set), *key;
    if (iter == NULL) {
        return -1;
    }
    while (i < n && (key = PyIter_Next(iter)) != NULL) {
        items[i++] = key;
        Py_DECREF(key);
    }
    Py_DECREF(iter);
    if (PyErr_Occurred()) {
        return -1;
    }
#endif
    return i;
}

/* A new ``type`` (NULL: a plain tuple) of ``size`` items, stolen; NULL when any item is NULL. */
static inline PyObject *tuples_new_named(PyTypeObject *type, Py_ssize_t size, PyObject **items) {
    for (Py_ssize_t i = 0; i < size; i++) {
        if (items[i] == NULL) {
            for (Py_ssize_t j = 0; j < size; j++) {
                Py_XDECREF(items[j]);
            }
            return NULL;
        }
    }
    PyObject *t = type == NULL ? PyTuple_New(size) : type->tp_alloc(type, size);
    if (t == NULL) {
        for (Py_ssize_t j = 0; j < size; j++) {
            Py_DECREF(items[j]);
        }
        return NULL;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        PyTuple_SET_ITEM(t, i, items[i]);
    }
    return t;
}

/* A new plain tuple: tuple ``t`` with item ``index`` replaced by ``value`` (stolen), as tuples.put. */
static inline PyObject *tuples_put(PyObject *t, Py_ssize_t index, PyObject *value) {
    if (value == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    PyObject *out = PyTuple_New(n);
    if (out == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(out, i, i == index ? value : Py_NewRef(PyTuple_GET_ITEM(t, i)));
    }
    return out;
}

/* A new plain tuple: ``log`` with ``record`` (stolen) appended; NULL when ``record`` is NULL. */
static inline PyObject *tuples_append(PyObject *log, PyObject *record) {
    if (record == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(log);
    PyObject *out = PyTuple_New(n + 1);
    if (out == NULL) {
        Py_DECREF(record);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(out, i, Py_NewRef(PyTuple_GET_ITEM(log, i)));
    }
    PyTuple_SET_ITEM(out, n, record);
    return out;
}

/* Appends the pair (action, next) to the list ``out``, stealing ``next``; -1 and an exception, or 0. */
static inline int tuples_emit(PyObject *out, PyObject *action, PyObject *next) {
    if (next == NULL) {
        return -1;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(next);
        return -1;
    }
    PyTuple_SET_ITEM(pair, 0, Py_NewRef(action));
    PyTuple_SET_ITEM(pair, 1, next);
    int status = PyList_Append(out, pair);
    Py_DECREF(pair);
    return status;
}

/* A frozenset of at most ``max`` (at most 32) ids in range(n) as a mask into *out: -1 and an exception,
 * 0, or 1 for anything else. */
static inline int tuples_read_mask(PyObject *set, int n, Py_ssize_t max, unsigned *out) {
    if (!PyFrozenSet_CheckExact(set)) {
        return 1;
    }
    PyObject *items[32];
    Py_ssize_t size = tuples_set_items(set, items, max);
    if (size < 0 || size > max) {
        return size < 0 ? -1 : 1;
    }
    unsigned mask = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        long r;
        int status = tuples_read_long(items[i], &r);
        if (status != 0) {
            return status;
        }
        if (r < 0 || r >= n) {
            return 1;
        }
        mask |= 1u << r;
    }
    *out = mask;
    return 0;
}

/* The frozenset of the ids of ``mask``'s bits below ``bits``, made once into ``cache[mask]`` (which
 * keeps a reference for good); a new reference. */
static inline PyObject *tuples_mask_set(PyObject **cache, int bits, unsigned mask) {
    PyObject *set = cache[mask];
    if (set == NULL) {
        set = PyFrozenSet_New(NULL);
        if (set == NULL) {
            return NULL;
        }
        for (int r = 0; r < bits; r++) {
            if (mask & (1u << r)) {
                PyObject *id = PyLong_FromLong(r);
                if (id == NULL || PySet_Add(set, id) < 0) {
                    Py_XDECREF(id);
                    Py_DECREF(set);
                    return NULL;
                }
                Py_DECREF(id);
            }
        }
        cache[mask] = set;
    }
    return Py_NewRef(set);
}

#endif
