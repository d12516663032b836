"""Group documents on disk, for the failure tests: the file plugin's <dir>/<GROUP>.json and
the agent's snapshot state_dir/<GROUP>.json share one format,
{"group", "md5", "lastModifyTime", "data": [items as the admin sent them]}.

"Whole" is checked strictly: the document parses, has every field with the right type,
names the group its file is named for, and (for data an emulator served) its items hash to
its md5 exactly as the admin computes it, so a file cut short or mixed from two versions
cannot pass.
"""
import glob
import json
import os

import harness


def file_subscriber(directory, name="files"):
    """The subscribers: entry of a file plugin writing into `directory`."""
    return {"name": name, "library": "file", "config": {"dir": directory}}


def _key(group, item):
    """The item's key as the agent keys it (docs/keys.md)."""
    if group == "PLUGIN":
        return item.get("name")
    if group == "DISCOVER_UPSTREAM":
        return item.get("selectorId")
    if group == "AI_PROXY_API_KEY":
        return "%s::%s" % (item.get("selectorId"), item.get("proxyApiKey"))
    return item.get("appKey" if group == "APP_AUTH" else "id")


def _replay(directory, group, doc):
    """doc (an agent's snapshot file) with the records of its journal
    (STATE_DIR/GROUP.journal, agent/store/journal.h) applied: the version the agent would
    load. Stops, as the agent does, at a record cut short or that follows another version;
    a journal whose header names another file version is ignored."""
    try:
        with open(os.path.join(directory, group + ".journal"), "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return doc
    nl = raw.find(b"\n")
    head = raw[:nl].split() if nl >= 0 else []
    if (len(head) != 4 or head[:2] != [b"gwsync-journal", b"1"] or
            head[2].decode() != doc["md5"] or int(head[3]) != doc["lastModifyTime"]):
        return doc
    at = nl + 1
    while True:
        eol = raw.find(b"\n", at)
        if eol < 0:
            return doc
        fields = raw[at:eol].split()
        if len(fields) != 2:
            return doc
        n = int(fields[0])
        if len(raw) < eol + 1 + n + 1:
            return doc
        rec = json.loads(raw[eol + 1:eol + 1 + n].decode("utf-8"))
        if rec["from"] != doc["md5"]:
            return doc
        gone = set(rec["removed"]) | {_key(group, it) for it in rec["items"]}
        kept = [it for it in doc["data"] if _key(group, it) not in gone]
        data, k = [], 0
        puts = dict(zip(rec["at"], rec["items"]))
        for pos in range(rec["count"]):
            if pos in puts:
                data.append(puts[pos])
            else:
                data.append(kept[k])
                k += 1
        doc = dict(doc, md5=rec["md5"], lastModifyTime=rec["lastModifyTime"], data=data)
        at = eol + 1 + n + 1


def read(directory, group):
    """The parsed GROUP.json, or None while it does not exist. An agent's state_dir also
    holds GROUP.journal, the versions written after the file as what changed: they are
    applied, so this is the version on disk either way."""
    try:
        with open(os.path.join(directory, group + ".json"), "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        return None
    return _replay(directory, group, doc) if isinstance(doc, dict) and "md5" in doc else doc


def md5(directory, group):
    doc = read(directory, group)
    return doc["md5"] if doc else None


def wait_version(directory, group, want_md5, timeout=20.0, want_time=None):
    """Wait until directory/GROUP.json holds version want_md5 (stamped want_time, if given);
    returns the document."""
    def check():
        doc = read(directory, group)
        if want_time is not None and doc and doc["lastModifyTime"] != want_time:
            return None
        return doc if doc and doc["md5"] == want_md5 else None
    return harness.wait_until(check, timeout=timeout,
                              message="%s/%s.json at version %s" % (directory, group, want_md5))


def wait_admin_data(directory, emu, groups=None, timeout=20.0, times=True):
    """Wait until every group's file holds exactly the admin's current version and items.
    times=False: a group whose md5 the agent already held keeps the lastModifyTime it had
    (a restarted admin stamps unchanged data anew; same md5 means nothing to take)."""
    docs = {}
    for g in groups or emu.groups:
        v = emu.data(g)
        # With times, wait for the admin's stamp too: a snapshot version of the same md5 is
        # on disk until the admin's own copy (a new lastModifyTime) has been delivered.
        doc = wait_version(directory, g, v["md5"], timeout,
                           want_time=v["lastModifyTime"] if times else None)
        assert doc["data"] == v["data"], \
            "%s/%s.json: items differ from the admin's" % (directory, g)
        docs[g] = doc
    return docs


def check_whole(path, hashed=True):
    """Parse one group document and check it is complete; returns it (AssertionError if
    not). hashed: its items must hash to its md5 (true of everything an emulator served)."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError as e:
        raise AssertionError("%s (%d bytes) is not whole JSON: %s; ends with %r"
                             % (path, len(raw), e, raw[-80:]))
    group = os.path.basename(path)[:-len(".json")]
    assert isinstance(doc, dict), path
    assert doc.get("group") == group, "%s: group %r" % (path, doc.get("group"))
    assert isinstance(doc.get("md5"), str) and doc["md5"], path
    assert isinstance(doc.get("lastModifyTime"), int), path
    assert isinstance(doc.get("data"), list), path
    assert raw.endswith(b"\n"), "%s does not end with a newline" % path
    if hashed:
        got = harness.md5_of(doc["data"])
        assert got == doc["md5"], \
            "%s: items hash to %s, the document says %s" % (path, got, doc["md5"])
    return doc


def check_dir_whole(directory, hashed=True):
    """check_whole() for every *.json in directory: {group: document}."""
    return {os.path.basename(p)[:-5]: check_whole(p, hashed)
            for p in sorted(glob.glob(os.path.join(directory, "*.json")))}


def leftover_temporaries(directory):
    """Temporary files an interrupted atomic write left behind (dot files)."""
    try:
        return sorted(n for n in os.listdir(directory) if n.startswith(".") and ".tmp" in n)
    except FileNotFoundError:
        return []
