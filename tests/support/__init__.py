"""Helpers the tests share (peers, servers, drivers, fixtures' worlds): not tests themselves."""
