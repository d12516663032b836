#!/usr/bin/env python3
"""WebSocket sync end to end (issue 11): the real gwsyncd against the admin emulator's
/websocket endpoint, proving for WebSocket what the long-polling suite proves for HTTP:
start-up sync, changes within milliseconds, several servers, reconnects that remove what
was deleted meanwhile, refused handshakes, random edits converging, malformed messages,
SIGTERM, --once, the snapshot cold start and anti-entropy repairs."""
import json
import os
import random
import signal
import time

import groupfiles
import harness
import synclog

WS_GROUPS = harness.SHENYU_GROUPS
FAST_RETRY = {"attempts": 2, "interval": "300ms", "backoff": "1s"}


def ws_url(emu):
    return "ws://127.0.0.1:%d/websocket" % emu.port


def strip_nulls(v):
    if isinstance(v, dict):
        return {k: strip_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [strip_nulls(x) for x in v]
    return v


def canon(items):
    return sorted(json.dumps(strip_nulls(i), sort_keys=True, ensure_ascii=False) for i in items)


def ws_config(servers, files=None, websocket=None, groups=WS_GROUPS, **kw):
    admin_extra = dict(kw.pop("admin_extra", {}))
    if websocket is not None:
        admin_extra["websocket"] = websocket
    subs = [groupfiles.file_subscriber(files)] if files else None
    return harness.make_config(servers=[s if isinstance(s, str) else ws_url(s) for s in servers],
                               groups=groups, subscribers=subs, admin_extra=admin_extra, **kw)


def wait_converged(files, emus, groups=WS_GROUPS, timeout=20.0):
    """Every group's file holds exactly the admin's items (nulls omitted, any order)."""
    emus = emus if isinstance(emus, (list, tuple)) else [emus]

    def check():
        for g in groups:
            doc = groupfiles.read(files, g)
            if doc is None or canon(doc["data"]) != canon(emus[0].data(g)["data"]):
                return None
        return True
    try:
        harness.wait_until(check, timeout=timeout, interval=0.05, message="converged")
    except AssertionError:
        for g in groups:
            doc = groupfiles.read(files, g)
            have = canon(doc["data"]) if doc else None
            want = canon(emus[0].data(g)["data"])
            if have != want:
                raise AssertionError("group %s differs: agent %s\nadmin %s"
                                     % (g, have and len(have), len(want)))
        raise


def ws_requests(emu, what="handshake"):
    return [r for r in emu.requests("websocket") if r.get("ws") == what]


class Startup(harness.IntegrationTest):

    def test_startup_sync_of_all_groups_with_the_headers(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, websocket={"origin": "ws://gw:9195"},
                                  gateway_port=9195, log_level="debug",
                                  status={"listen": "127.0.0.1:%d" % harness.free_port()}))
        wait_converged(files, emu)
        d.wait_status(harness.healthy, "ready")
        hs = ws_requests(emu)
        self.assertEqual(len(hs), 1, hs)
        h = hs[0]["headers"]
        self.assertEqual(h.get("namespaceId"), harness.DEFAULT_NAMESPACE)
        self.assertEqual(h.get("ClientPort"), "9195")
        self.assertEqual(h.get("Origin"), "ws://gw:9195")
        texts = [r["text"] for r in ws_requests(emu, "message")]
        self.assertEqual(texts[:3], ["RUNNING_MODE", "MYSELF", "RUNNING_MODE"])
        # one version per group, no more (the MYSELF answer is the start-up fetch), except
        # PROXY_SELECTOR and DISCOVER_UPSTREAM, which the admin sends one item at a time
        for g in ("PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA", "AI_PROXY_API_KEY"):
            self.assertEqual(len(synclog.accepted_lines(d, group=g)), 1, g)

    def test_a_change_within_milliseconds_and_exact_deltas(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, log_level="info"))
        wait_converged(files, emu)
        latencies = []
        for i in range(5):
            t0 = time.monotonic()
            v = emu.upsert("RULE", synclog.rule("latency-%d" % i))
            # an event source stamps its own md5: the new rule is told by the count
            d.wait_status(harness.holds("RULE", items=v["count"]), interval=0.005)
            latencies.append(time.monotonic() - t0)
        print("websocket change latencies: %s ms" % ", ".join("%.1f" % (x * 1000) for x in latencies))
        self.assertLess(sorted(latencies)[2], 0.2, latencies)
        emu.delete("RULE", key="latency-0")
        wait_converged(files, emu, ["RULE"])
        self.assertEqual(len(ws_requests(emu)), 1)   # one connection all along

    def test_a_large_fragmented_answer_written_slowly(self):
        # 20,000 rules: one MYSELF message of megabytes, in 8 KiB fragments (Tomcat's), that
        # the admin takes a while to write; the agent waits for the end marker instead of
        # taking the silence before it for the end
        emu = self.emulator(mode="shenyu", rules=20000, ws_fragment_size=8192)
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, log_level="info"))
        wait_converged(files, emu, ["RULE"], timeout=60)
        self.assertEqual(len(groupfiles.read(files, "RULE")["data"]), 20000)
        d.assert_no_log(r"never arrived|RULE version \S+ \(lastModifyTime \d+, 0 items\)")

    def test_two_servers_and_the_first_one_down(self):
        c = self.cluster(2, mode="shenyu")
        files = self.tmpdir()
        dead = "ws://127.0.0.1:%d/websocket" % harness.free_port()
        d = self.daemon(ws_config([dead, c[0], c[1]], files, retry=FAST_RETRY))
        wait_converged(files, c[0])
        d.wait_status(harness.conn_failing(dead, 1, "connect"), "the dead server failing")
        c.upsert("RULE", synclog.rule("both"))
        wait_converged(files, c[0], ["RULE"])
        c[0].stop()
        c[1].upsert("RULE", synclog.rule("only-second"))
        wait_converged(files, c[1], ["RULE"])


class Reconnect(harness.IntegrationTest):

    def test_restart_reconnects_and_removes_what_was_deleted_meanwhile(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, retry=FAST_RETRY))
        wait_converged(files, emu)
        emu.upsert("RULE", synclog.rule("goes-away"))
        emu.upsert("APP_AUTH", {"appKey": "GONE0000", "appSecret": "s", "enabled": True,
                                "open": False, "namespaceId": harness.DEFAULT_NAMESPACE})
        wait_converged(files, emu, ["RULE", "APP_AUTH"])
        emu.stop()
        d.wait_status(harness.all_of(harness.conn_errors(ws_url(emu), "connect"),
                                     harness.conn_state(ws_url(emu), "connecting", "retrying",
                                                        "backing_off")), "the admin gone")
        # its data is the generated dataset again (both items gone), and no META_DATA at
        # all: a 2.7 admin sends nothing for an empty group, so only the end of the full
        # sync can tell the agent to empty it
        emu.restart(metadata=0)
        wait_converged(files, emu)
        keys = [i.get("id") for i in groupfiles.read(files, "RULE")["data"]]
        self.assertNotIn("goes-away", keys)
        self.assertEqual(groupfiles.read(files, "META_DATA")["data"], [])
        d.wait_status(harness.holds("META_DATA", items=0), "META_DATA emptied by the full sync")

    def test_a_stalled_admin_is_dead_after_three_silent_ping_intervals(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, retry=FAST_RETRY,
                                  websocket={"ping_interval": "300ms"}))
        wait_converged(files, emu)
        emu.fault("stall", endpoint="websocket", on="now", seconds=3)
        doc = d.wait_status(harness.conn_errors(ws_url(emu), "timeout"), "a dead connection",
                            timeout=5)
        self.assertIn("nothing received for 3 ping intervals (900 ms)",
                      harness.connection(doc, ws_url(emu))["lastError"])
        emu.clear_faults()
        harness.wait_until(lambda: len(ws_requests(emu)) >= 2, message="a new handshake")
        emu.upsert("RULE", synclog.rule("after-stall"))
        wait_converged(files, emu, ["RULE"])


class OldAdmins(harness.IntegrationTest):

    def test_a_2_6_admin_without_running_mode_and_a_group_it_does_not_know(self):
        # 2.6: no RUNNING_MODE answer (the MYSELF answer ends with a silence), empty lists
        # sent, no AI_PROXY_API_KEY: that group is served empty so the agent gets ready
        groups = [g for g in WS_GROUPS if g != "AI_PROXY_API_KEY"]
        emu = self.emulator(mode="shenyu", ws_version="2.6", groups=groups)
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, log_level="info",
                                  status={"listen": "127.0.0.1:%d" % harness.free_port()}))
        wait_converged(files, emu, groups)
        # log wording is the behaviour here: the warning an operator must see
        d.wait_log(r"group AI_PROXY_API_KEY never arrived \(an admin older than the group does "
                   r"not send it\); serving it empty", timeout=15)
        d.wait_status(harness.all_of(harness.healthy, harness.holds("AI_PROXY_API_KEY", items=0)),
                      "ready, AI_PROXY_API_KEY served empty")
        harness.wait_until(lambda: groupfiles.read(files, "AI_PROXY_API_KEY"),
                           message="AI_PROXY_API_KEY delivered")
        self.assertEqual(groupfiles.read(files, "AI_PROXY_API_KEY")["data"], [])
        emu.delete("RULE", key=emu.data("RULE")["data"][0]["id"])
        wait_converged(files, emu, ["RULE"])


class Namespace(harness.IntegrationTest):

    def test_a_namespace_the_admin_does_not_have_empties_nothing(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, retry=FAST_RETRY))
        wait_converged(files, emu)
        d.stop()
        d.write_config(ws_config([emu], files, retry=FAST_RETRY, namespace="no-such-ns"))
        d.start()
        # log wording is the behaviour here: the hint an operator must see
        d.wait_log(r"its full sync brought no data at all \(is admin.namespace 'no-such-ns' "
                   r"one this admin has\?\); nothing held is removed")
        # the start-up sync failed, so the snapshot serves: nothing emptied
        d.wait_status(harness.all_of(harness.healthy, *[harness.holds(g, from_snapshot=True)
                                                        for g in WS_GROUPS]),
                      "ready on the snapshot")
        d.assert_no_log(r"store: accepted")
        wait_converged(files, emu, timeout=2)


class Refusals(harness.IntegrationTest):

    def test_bad_origin_reported_and_retried_on_schedule(self):
        emu = self.emulator(mode="shenyu", ws_allow_origins="ws://gw:9195")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, retry=FAST_RETRY))
        # log wording is the behaviour here: the hint names admin.websocket.origin
        d.wait_log(r"WebSocket handshake refused: HTTP 403 \(a ShenYu 2\.5\+ admin with "
                   r"allowOrigins set needs admin.websocket.origin\) \[http\]; try 1 of 2 "
                   r"failed, next try in 300 ms")
        d.wait_status(harness.all_of(harness.conn_failing(ws_url(emu), 2, "http"),
                                     harness.conn_state(ws_url(emu), "backing_off")),
                      "a whole failed round")
        t = [r["t"] for r in ws_requests(emu)]
        self.assertGreaterEqual(t[1] - t[0], 0.25, t)
        emu.control("ws-mode", {"allow_origins": ""})
        wait_converged(files, emu)

    def test_bad_token_reported_never_logged(self):
        emu = self.emulator(mode="shenyu", ws_version="head", ws_token="right-token")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, retry=FAST_RETRY,
                                  websocket={"token": "wrong-token-123"}))
        # log wording is the behaviour here: the hint names the token
        d.wait_log(r"HTTP 500 \(a ShenYu admin answers 500 when X-Shenyu-Sync-Token")
        self.assertTrue(ws_requests(emu)[0]["headers"].get("X-Shenyu-Sync-Token"))
        emu.control("ws-mode", {"token": "wrong-token-123"})
        wait_converged(files, emu)
        d.stop()
        self.assertNotIn("wrong-token-123", d.text())

    def test_closed_at_once_points_at_the_namespace(self):
        # a 2.7 admin closes a session without namespaceId at once (code 1000, no data)
        emu = self.emulator(mode="shenyu")
        emu.fault("drop", endpoint="websocket", on="message", how="frame", code=1000, count=3)
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, retry=FAST_RETRY))
        # log wording is the behaviour here: the hint names admin.namespace
        d.wait_log(r"the admin closed the connection right after the handshake \(with close "
                   r"code 1000\): a ShenYu 2\.7\+ admin does this when the namespaceId header is "
                   r"missing or refused; check admin.namespace")
        wait_converged(files, emu)

    def test_not_the_cluster_master(self):
        emu = self.emulator(mode="shenyu", ws_running_mode="cluster", ws_not_master=True,
                            ws_master_url="http://10.0.0.7:9095")
        d = self.daemon(ws_config([emu], None, retry=FAST_RETRY))
        # log wording is the behaviour here: the message names the master
        d.wait_log(r"is not the master of its ShenYu cluster \(the master is "
                   r"ws://10\.0\.0\.7:9095/websocket\)")
        self.assertTrue(harness.nothing_held(d.status()))   # nothing swept, nothing made up


class BadInput(harness.IntegrationTest):

    def test_malformed_messages_keep_the_last_good_version(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files))
        wait_converged(files, emu)
        before = groupfiles.read(files, "RULE")
        mark = d.mark()
        emu.control("ws-send", {"message": {"groupType": "RULE", "eventType": "UPDATE",
                                            "data": [{"id": "bad", "enabled": "yes"}]}})
        # log wording is the behaviour here: the refusal names the group and the field
        d.wait_log(r"server ws://\S+: group RULE: UPDATE message refused, keeping the last "
                   r"good version: .*enabled", since=mark)
        # no /status field reports this: a repair asked for (repairs counts differences)
        d.wait_log(r"asking for a full sync \(MYSELF\) to repair", since=mark)
        emu.control("ws-send", {"text": "{not json"})
        # log wording is the behaviour here: the refusal says what was refused
        d.wait_log(r"message refused \(9 bytes\), keeping the last good version", since=mark)
        emu.control("ws-send", {"message": {"groupType": "NEW_GROUP", "eventType": "UPDATE",
                                            "data": []}})
        self.assertEqual(groupfiles.read(files, "RULE")["data"], before["data"])
        emu.upsert("RULE", synclog.rule("still-works"))
        wait_converged(files, emu, ["RULE"])
        self.assertTrue(d.alive())

    def test_a_protocol_error_is_named_not_blamed_on_the_admin_closing(self):
        # issue 20, item 7: frames RFC 6455 forbids used to be logged as "connection closed
        # by the admin (without a close frame)"; the admin had closed nothing.
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, retry=FAST_RETRY))
        wait_converged(files, emu)
        for n, frame in enumerate(("opcode", "big_control", "control", "rsv"), 1):
            # exactly the session the agent uses, the last one's gone
            harness.wait_until(lambda: len(emu.state()["websocket"]["clients"]) == 1,
                               message="one session")
            mark = d.mark()
            emu.fault("garbage", endpoint="websocket", on="now", what="frame", frame=frame)
            # log wording is the behaviour here: a protocol error named as one
            d.wait_log(r"warn  websocket: server ws://\S+: WebSocket protocol error: "
                       r"libwebsockets refused what the admin sent \(a frame RFC 6455 forbids"
                       r".*\) and closed the connection \[parse\]; reconnecting", since=mark)
            # counted, and a full sync ended after it (lastSuccess)
            d.wait_status(harness.all_of(harness.conn_errors(ws_url(emu), "parse", n),
                                         harness.conn_worked_since_error(ws_url(emu))),
                          "synced again after the protocol error")
            d.assert_no_log(r"closed by the admin", since=mark)
        # an admin that really closes (FIN, no close frame) is still said to have closed
        mark = d.mark()
        emu.fault("drop", endpoint="websocket", on="now", how="close")
        # log wording is the behaviour here: a close named as one
        d.wait_log(r"connection closed by the admin \(without a close frame\) \[connect\]",
                   since=mark)
        d.assert_no_log(r"protocol error", since=mark)
        wait_converged(files, emu)

    def test_a_trickled_handshake_fails_at_connect_timeout(self):
        # issue 20, item 4, WebSocket's HTTP side: a 101 whose headers arrive a few bytes a
        # second held the connection's thread for good (libwebsockets' own timeout did
        # not end it); the upgrade must be done within admin.connect_timeout, whole
        emu = self.emulator(mode="shenyu")
        emu.fault("trickle", endpoint="websocket", on="handshake", rate=4, count=1)
        files = self.tmpdir()
        t0 = time.monotonic()
        d = self.daemon(ws_config([emu], files, retry=FAST_RETRY, connect_timeout="2s"))
        doc = d.wait_status(harness.conn_failing(ws_url(emu), 1, "timeout"),
                            "a handshake past connect_timeout", timeout=30)
        self.assertIn("the WebSocket handshake did not complete within 2000 ms "
                      "(admin.connect_timeout)", harness.connection(doc, ws_url(emu))["lastError"])
        self.assertLess(time.monotonic() - t0, 20)
        wait_converged(files, emu)

    def test_a_message_over_max_response_is_refused(self):
        emu = self.emulator(mode="shenyu")
        d = self.daemon(ws_config([emu], None, retry=FAST_RETRY, max_response=4096))
        doc = d.wait_status(harness.conn_errors(ws_url(emu), "too_large"), "a message refused")
        self.assertIn("a message larger than admin.max_response (4096 bytes) refused",
                      harness.connection(doc, ws_url(emu))["lastError"])


class Lifecycle(harness.IntegrationTest):

    def test_sigterm_while_connected_within_a_second(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files))
        wait_converged(files, emu)
        rc, elapsed = d.stop(signal.SIGTERM)
        self.assertEqual(rc, 0)
        self.assertLess(elapsed, 1.0)

    def test_once_over_websocket(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files), args=["--once"])
        self.assertEqual(d.wait_exit(20), 0, d.tail())
        wait_converged(files, emu, timeout=1)

    def test_snapshot_cold_start_then_converge(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        port = emu.port
        once = self.daemon(ws_config([emu], files), args=["--once"])
        self.assertEqual(once.wait_exit(20), 0, once.tail())
        emu.stop()
        files2 = self.tmpdir()
        d = self.daemon(ws_config(["ws://127.0.0.1:%d/websocket" % port], files2,
                                  retry=FAST_RETRY), tmp=once.tmp)
        d.wait_status(harness.all_of(harness.healthy, *[harness.holds(g, from_snapshot=True)
                                                        for g in WS_GROUPS]),
                      "ready on the snapshot")
        emu.start()
        emu.upsert("RULE", synclog.rule("after-cold-start"))
        wait_converged(files2, emu)


class Convergence(harness.IntegrationTest):

    def test_100_random_edits_converge(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, log_level="info"))
        wait_converged(files, emu)
        rnd = random.Random(11)
        for i in range(100):
            g = rnd.choice(["RULE", "SELECTOR", "META_DATA", "APP_AUTH", "PLUGIN"])
            items = emu.data(g)["data"]
            op = rnd.random()
            if op < 0.3 and items:
                key = "appKey" if g == "APP_AUTH" else "id"
                emu.delete(g, key=rnd.choice(items)[key])
            elif op < 0.8 and items:
                it = dict(rnd.choice(items))
                if g == "APP_AUTH":
                    it["appSecret"] = "secret-%d" % i
                else:
                    it["sort"] = rnd.randint(1, 1000)
                    if rnd.random() < 0.5:
                        it["id"] = "new-%d" % i
                        if g == "PLUGIN":  # plugin names are unique in ShenYu (its key)
                            it["name"] = "plugin-new-%d" % i
                emu.upsert(g, it)
            elif g in ("SELECTOR", "RULE") and emu.data("SELECTOR")["data"]:
                plugin = rnd.choice(emu.data("SELECTOR")["data"])["pluginName"]
                try:
                    emu.control("refresh", {"plugin": plugin, "group": g})
                except harness.EmulatorError:
                    pass   # that plugin was deleted by an earlier edit
            else:
                emu.upsert("RULE", synclog.rule("r-%d" % i))
        wait_converged(files, emu)
        self.assertTrue(d.alive())

    def test_anti_entropy_repairs_a_lost_event(self):
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        port = harness.free_port()
        d = self.daemon(ws_config([emu], files, websocket={"resync_interval": "1s"},
                                  status={"listen": "127.0.0.1:%d" % port}))
        wait_converged(files, emu)
        time.sleep(1.5)   # a resync with nothing to repair delivers nothing
        d.assert_no_log(r"repair:")
        n = harness.changes(d.status())
        emu.control("upsert", {"group": "RULE", "item": synclog.rule("lost-event"),
                               "push": False})
        d.wait_status(lambda doc: harness.connection(doc, ws_url(emu))["repairs"] == 1,
                      "one repair", timeout=5)
        e = d.wait_history("RULE", None, lambda e: harness.changed(e) and
                           "lost-event" in e["added"]["first"], "the repair's version", timeout=5)
        self.assertEqual((e["added"], e["updated"]["count"], e["removed"]["count"]),
                         ({"count": 1, "first": ["lost-event"], "names": ["rule"]}, 0, 0))
        wait_converged(files, emu, ["RULE"])
        self.assertEqual(harness.changes(d.status()), n + 1)   # one version, the repair
        _, _, body = harness.http_request("GET", "http://127.0.0.1:%d/metrics" % port)
        self.assertIn(b"gwsync_repairs_total{server=\"" + ws_url(emu).encode() + b"\"} 1", body)

    def test_an_emptied_group_is_repaired_at_its_own_anti_entropy_interval(self):
        # A ShenYu 2.7 admin sends nothing for REFRESH [] (every app of APP_AUTH deleted):
        # only a full sync shows the group empty. admin.websocket.resync_groups gives
        # APP_AUTH its own, short interval (issue 31, item 9); the default stays 10 minutes.
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files, websocket={"resync_groups": {"APP_AUTH": "1s"}}))
        wait_converged(files, emu)
        emu.control("replace", {"group": "APP_AUTH", "items": [], "push": False})
        d.wait_status(lambda doc: doc["groups"]["APP_AUTH"]["items"] == 0,
                      "APP_AUTH emptied by the anti-entropy full sync", timeout=5)
        d.wait_log(r"repair:.*APP_AUTH", timeout=5)

    def test_an_empty_refresh_the_admin_does_send_empties_the_group_at_once(self):
        # An admin before 2.7 sends REFRESH with an empty list: a message, unlike 2.7's
        # silence, so the agent can tell "empty" from "no change" and applies it at once,
        # with no full sync (resync_interval stays 10 minutes).
        emu = self.emulator(mode="shenyu", ws_version="2.6")
        files = self.tmpdir()
        d = self.daemon(ws_config([emu], files))
        wait_converged(files, emu)
        emu.control("replace", {"group": "APP_AUTH", "items": [], "event": "REFRESH"})
        d.wait_status(lambda doc: doc["groups"]["APP_AUTH"]["items"] == 0,
                      "APP_AUTH emptied by the REFRESH", timeout=5)
        d.assert_no_log(r"repair:")


class Plugins(harness.IntegrationTest):
    """Issue 20 items 10 and 11: a plugin's identity over WebSocket."""

    def test_a_renamed_plugin_leaves_no_ghost(self):
        # The admin renames a plugin: the same id under a new name, pushed as PLUGIN/UPDATE
        # of the new item only. Plugins are keyed by name, so the old name must go with it.
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        self.daemon(ws_config([emu], files))
        wait_converged(files, emu)
        plugins = emu.data("PLUGIN")["data"]
        old = plugins[0]
        renamed = dict(old, name=old["name"] + "-renamed")
        emu.control("replace", {"group": "PLUGIN", "items": [renamed] + plugins[1:],
                                "push": False})
        emu.control("ws-send", {"message": {"groupType": "PLUGIN", "eventType": "UPDATE",
                                            "data": [renamed]}})
        wait_converged(files, emu, ["PLUGIN"])
        names = [p["name"] for p in groupfiles.read(files, "PLUGIN")["data"]]
        self.assertNotIn(old["name"], names)

    def test_plugin_refresh_replaces_the_plugin_list(self):
        # "Sync all" in the admin sends PLUGIN/REFRESH with the namespace's whole plugin
        # list: a plugin missing from it is gone (SELECTOR and RULE REFRESH stay per plugin)
        emu = self.emulator(mode="shenyu")
        files = self.tmpdir()
        self.daemon(ws_config([emu], files))
        wait_converged(files, emu)
        plugins = emu.data("PLUGIN")["data"]
        emu.control("replace", {"group": "PLUGIN", "items": plugins[1:], "push": False})
        emu.control("refresh", {"all": True})
        wait_converged(files, emu, ["PLUGIN"])
        names = [p["name"] for p in groupfiles.read(files, "PLUGIN")["data"]]
        self.assertNotIn(plugins[0]["name"], names)


class Tls(harness.IntegrationTest):

    def test_wss_with_the_admins_ca_and_with_a_wrong_one(self):
        pki = harness.make_test_ca(os.path.join(self.tmpdir(), "pki"))
        emu = self.emulator(mode="shenyu", tls=pki)
        url = "wss://127.0.0.1:%d/websocket" % emu.port
        files = self.tmpdir()
        self.daemon(ws_config([url], files, tls={"ca_file": pki["ca"]}))
        wait_converged(files, emu)
        bad = self.daemon(ws_config([url], None, retry=FAST_RETRY,
                                    tls={"ca_file": pki["wrong_ca"]}))
        # log wording is the behaviour here: the hint names admin.tls.ca_file
        bad.wait_log(r"server wss://\S+: cannot connect: .*\(check admin.tls.ca_file and that "
                     r"the URL names the host the certificate was issued for\) \[connect\]")
        self.assertTrue(harness.nothing_held(bad.status()))


if __name__ == "__main__":
    harness.main()
