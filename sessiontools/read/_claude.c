/* sessiontools.read._native.claude_summary: what `inspect` reads of a Claude Code session (a
 * transcript file and its subagent files), computed in one C pass over the bytes (issue 28),
 * without a Python object per line.
 *
 * claude_summary(files: list of bytes, limit, high, total_high) -> None or a tuple (see `result`).
 * None means "not sure": the session goes the ordinary way (orjson, the checks, `claude_code`'s
 * transcript), which gives every diagnostic. This scanner gives none but the two notices of a
 * clean file (an unknown line type, a parent not in the file), so it says None at anything else:
 * a line over `limit` bytes (0: any), one the JSON scanner of _project.c is not sure of (it is
 * included in _claude_line.c, not copied), not an object, without a type, a conversation line without a uuid, a
 * user/assistant line without a message object, a duplicated uuid, an escaped key or string where
 * a value is compared, a duplicated key among those read, a checked field (`read.claude_code.
 * checks`) off its fast mark (`high`/`total_high`: the counts' limits), an attachment Claude Code
 * renders, a synthetic API error reply, a boundary whose logical parent is not in the file and has
 * no parent (`claude_paths._written_before`), a non-scalar entrypoint.
 * The rules are `transcript.claude_code`'s, `claude_paths`' and `claude_usage`'s, in their order;
 * tests/read/test_claude_summary.py holds the result equal to the ordinary way's.
 * Its parts share _claude.h, which says which file does what. */
#include "_claude.h"

/* claude_summary(files, limit, high, total_high): None, or (files, billed) where files is a list
 * per file of (paths, notices, facts, largest answered prompt): paths a list of (leaf uuid, side,
 * the messages' lines, uuids and roles (three lists), compactions [(index, line, trigger, pre,
 * post, kept, uuid, ts)], synthetic, no usage); notices [(line, kind, text)] (kind 0: an unknown type, 1: an orphan's
 * parent); facts as `file_facts`; billed [(line, model, ts, id, stop, input, cache read, cache
 * write, output, 1h)]. Roles: R_*; triggers: TR_*. */
PyObject *claude_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t limit;
    Limits lim;
    if (nargs != 4 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "claude_summary(files: list, limit: int, high: int, total_high: int)");
        return NULL;
    }
    if ((limit = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if ((lim.high = PyLong_AsLongLong(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if ((lim.total_high = PyLong_AsLongLong(args[3])) == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t nf = PyList_GET_SIZE(args[0]);
    Py_buffer *bufs = calloc(nf + 1, sizeof *bufs);
    File *files = calloc(nf + 1, sizeof *files);
    FileWork *work = calloc(nf + 1, sizeof *work);
    Session S = {files, (int)nf, NULL, 0, 0};
    Map exact = {0}, by_message = {0};
    Bytes keys = {NULL, 0, 0};
    Ints *diags = calloc(nf + 1, sizeof *diags);
    PyObject *out = NULL, *list = NULL;
    int rc = ERR, got = 0, total = 0;
    if (bufs == NULL || files == NULL || work == NULL || diags == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < nf; got++)
        if (PyObject_GetBuffer(PyList_GET_ITEM(args[0], got), &bufs[got], PyBUF_SIMPLE) < 0)
            goto done;
    for (int i = 0; i < nf; i++) {
        if ((rc = read_file(bufs[i].buf, bufs[i].len, limit, &lim, &files[i])) != OK)
            goto done;
        work[i].S = &S;
        work[i].f = &files[i];
        if ((rc = tree(&work[i], &diags[i])) != OK)
            goto done;
        total += files[i].n;
        keys.cap += bufs[i].len + 2 * (Py_ssize_t)files[i].n;
    }
    rc = ERR;
    if ((S.resp = calloc(total + 1, sizeof *S.resp)) == NULL || (keys.buf = malloc(keys.cap + 1)) == NULL ||
        map_init(&exact, total + 1) < 0 || map_init(&by_message, total + 1) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if ((rc = bill(&S, &exact, &by_message, &keys)) != OK) {
        if (rc == ERR)
            PyErr_NoMemory();
        goto done;
    }
    if ((list = PyList_New(0)) == NULL)
        goto done;
    for (int i = 0; i < nf; i++) {
        FileWork *w = &work[i];
        if ((w->paths = PyList_New(0)) == NULL)
            goto done;
        if ((rc = file_paths(w)) != OK)
            goto done;
        rc = ERR;
        PyObject *notes = PyList_New(0), *facts = notes ? file_facts(w) : NULL;
        for (int k = 0; facts != NULL && k < diags[i].n; k += 3) {
            Rec *r = &files[i].r[diags[i].v[k + 2]];
            PyObject *t = Py_BuildValue("(iiN)", diags[i].v[k], diags[i].v[k + 1],
                                        str_of(diags[i].v[k + 1] ? r->parent : r->type_s));
            if (t == NULL || PyList_Append(notes, t) < 0)
                Py_CLEAR(facts);
            Py_XDECREF(t);
        }
        PyObject *t = facts ? Py_BuildValue("(ONNL)", w->paths, notes, facts, w->largest) : NULL;
        if (facts == NULL)
            Py_XDECREF(notes);
        if (t == NULL || PyList_Append(list, t) < 0) {
            Py_XDECREF(t);
            goto done;
        }
        Py_DECREF(t);
    }
    PyObject *billed = billed_list(&S);
    if (billed != NULL)
        out = Py_BuildValue("(ON)", list, billed);
    rc = out == NULL ? ERR : OK;
done:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&bufs[i]);
    for (int i = 0; work != NULL && i < nf; i++) {
        map_free(&work[i].nodes);
        map_free(&work[i].through);
        Py_XDECREF(work[i].paths);
        free(files[i].r);
        free(diags[i].v);
    }
    free(bufs);
    free(files);
    free(work);
    free(diags);
    free(S.resp);
    free(keys.buf);
    map_free(&exact);
    map_free(&by_message);
    Py_XDECREF(list);
    if (rc == NO) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (out == NULL && !PyErr_Occurred())
        PyErr_NoMemory();
    return out;
}
